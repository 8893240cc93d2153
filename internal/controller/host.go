package controller

import "net/url"

// hostOf is the host of a URL, the only part of it used in events and metrics:
// paths and queries may carry identifiers or tokens.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "invalid-url"
	}
	return u.Hostname()
}
