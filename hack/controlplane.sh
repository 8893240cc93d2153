#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl from their Go modules (hack/controlplane)
# into bin/k8s/<version>/, once. A stamp holds a hash of the inputs, so a second
# run reuses the binaries and a changed pin rebuilds them. Prints the folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/hack/controlplane"

# The control plane must match the client libraries the operator is built with.
api=$(awk '$1 == "k8s.io/api" {print $2; exit}' "$root/go.mod")
kube=$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' "$src/go.mod")
if [[ "${api#v0.}" != "${kube#v1.}" ]]; then
	echo "hack/controlplane pins k8s.io/kubernetes $kube but go.mod has k8s.io/api $api; align them" >&2
	exit 1
fi
version=${kube#v}
out="$root/bin/k8s/$version"
stamp=$(cat "$src"/go.mod "$src"/go.sum "$src"/*/main.go | sha256sum | cut -c1-16)

if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" ]] &&
	[[ -x "$out/kube-apiserver" && -x "$out/etcd" && -x "$out/kubectl" ]]; then
	echo "$out"
	exit 0
fi

echo "building kube-apiserver, etcd and kubectl $kube from Go modules into $out (about 10 minutes the first time)" >&2
mkdir -p "$out"
start=$(date +%s)
minor=$(echo "$version" | cut -d. -f2)
(cd "$src" && go build -trimpath \
	-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$kube -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean" \
	-o "$out/" ./kube-apiserver ./etcd ./kubectl)
echo "$stamp" >"$out/.stamp"
echo "control plane built in $(($(date +%s) - start))s" >&2
echo "$out"
