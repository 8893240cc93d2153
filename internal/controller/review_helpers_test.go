package controller_test

import "k8s.io/apimachinery/pkg/api/errors"

// unavailable is what a client sees while the API server is down or overloaded.
func unavailable() error {
	return errors.NewServiceUnavailable("injected: the API server is unavailable")
}
