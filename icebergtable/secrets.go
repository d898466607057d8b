package icebergtable

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/s3once/s3once/sink"
)

// secretWords mark a catalog property whose value is a secret: iceberg-go's
// s3.secret-access-key and s3.session-token, a REST catalog's credential
// and token, a password.
var secretWords = []string{"secret", "token", "credential", "password"}

// isSecretProperty reports whether the property name marks a secret.
func isSecretProperty(name string) bool {
	n := strings.ToLower(name)
	return slices.ContainsFunc(secretWords, func(w string) bool { return strings.Contains(n, w) })
}

// secretProblems lists the catalog properties that would put a secret in
// the pipeline graph, and the CatalogSecretsEnv entries that are not
// usable; no phrase shows a property's value.
func secretProblems(props, fromEnv map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(props)) {
		v := props[k]
		switch {
		case isSecretProperty(k) && v != "":
			out = append(out, fmt.Sprintf("CatalogProperties[%q] holds a secret, which would travel in the pipeline graph: name the environment variable that holds it in CatalogSecretsEnv instead", k))
		case hasPassword(v):
			out = append(out, fmt.Sprintf("CatalogProperties[%q] is a URL with a password, which would travel in the pipeline graph: give the URL without it and the password through CatalogSecretsEnv (a property of its own)", k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fromEnv)) {
		if _, ok := props[k]; ok && props[k] != "" {
			out = append(out, fmt.Sprintf("the catalog property %q is given both in CatalogProperties and in CatalogSecretsEnv: name one", k))
		}
		if env := fromEnv[k]; env == "" || strings.ContainsAny(env, "=\x00") {
			out = append(out, fmt.Sprintf("CatalogSecretsEnv[%q] must be the name of an environment variable", k))
		}
	}
	return out
}

// hasPassword reports whether v is a URL carrying a password.
func hasPassword(v string) bool {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return false
	}
	_, ok := u.User.Password()
	return ok
}

// catalogProperties are props with the secrets fromEnv names read from
// this machine's environment.
func catalogProperties(props, fromEnv map[string]string) (iceberg.Properties, error) {
	out := make(iceberg.Properties, len(props)+len(fromEnv))
	maps.Copy(out, props)
	for _, k := range slices.Sorted(maps.Keys(fromEnv)) {
		env := fromEnv[k]
		v, ok := os.LookupEnv(env)
		if !ok || v == "" {
			host, _ := os.Hostname()
			return nil, fmt.Errorf("s3once iceberg: CatalogSecretsEnv names the environment variable %s for the catalog property %q, which is not set on this machine (host %s, pid %d): set it for every process that runs the pipeline's workers (never in the pipeline's options, which travel in its graph): %w",
				env, k, host, os.Getpid(), sink.ErrCredentialsMissing)
		}
		out[k] = v
	}
	return out, nil
}
