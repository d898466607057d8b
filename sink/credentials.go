package sink

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/s3once/s3once/errcode"
)

// Credentials says where every machine that runs the sink (the program
// that builds the pipeline, and each worker) finds static S3 credentials.
// It holds names, never a secret: the pipeline graph, which the runner, its
// UI and its logs can show, carries these names alone, and each machine
// reads the credentials from its own environment or file when its DoFns
// start.
//
// The zero value uses the AWS SDK's default chain on each machine
// (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared
// files, a web identity, an instance or task role), which is what real
// deployments should use.
//
// On a job server (--runner=universal) the workers are processes the job
// server or its environment starts, and their environment is not the
// launcher's: set the variables in the environment of the worker
// processes (the job server's own, or the container's), or put the file
// on every worker machine. Never set them through the pipeline's options
// or its environment configuration: those travel in the graph. A name
// that is not set on a worker fails that worker's DoFn setup with one
// line carrying [s3once:credentials-missing].
type Credentials struct {
	// AccessKeyIDEnv and SecretAccessKeyEnv name the environment variables
	// that hold the access key ID and the secret access key; set both or
	// neither. SessionTokenEnv optionally names the variable that holds a
	// session token.
	AccessKeyIDEnv     string `json:"accessKeyIDEnv,omitempty"`
	SecretAccessKeyEnv string `json:"secretAccessKeyEnv,omitempty"`
	SessionTokenEnv    string `json:"sessionTokenEnv,omitempty"`
	// File names a credentials file in the AWS shared-credentials format
	// (an INI file of profiles with aws_access_key_id and
	// aws_secret_access_key), at the same path on every machine; Profile
	// picks its section ("default" when empty). Profile alone picks a
	// profile of the default shared files. File and Profile exclude the
	// environment variables above.
	File    string `json:"file,omitempty"`
	Profile string `json:"profile,omitempty"`
}

// ErrCredentialsMissing is wrapped by the error of a machine that cannot
// find the credentials Config.Credentials names: an environment variable
// that is not set (or is empty), or a file that cannot be read. Its message
// carries the stable code errcode.CredentialsMissing.
var ErrCredentialsMissing = errcode.New(errcode.CredentialsMissing, "the credentials Config.Credentials names are not on this machine")

// envName is what an environment variable's name may be.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// accessKeyShape matches an AWS access key ID, which no environment
// variable is named like.
var accessKeyShape = regexp.MustCompile(`^(AKIA|ASIA)[A-Z0-9]{16}$`)

// problems lists what is wrong with c, each as one phrase; none names a
// value that might be a secret.
func (c Credentials) problems() []string {
	var out []string
	envs := []struct{ field, name string }{
		{"AccessKeyIDEnv", c.AccessKeyIDEnv}, {"SecretAccessKeyEnv", c.SecretAccessKeyEnv}, {"SessionTokenEnv", c.SessionTokenEnv},
	}
	for _, e := range envs {
		switch {
		case e.name == "":
		case accessKeyShape.MatchString(e.name):
			out = append(out, fmt.Sprintf("Credentials.%s holds what looks like an access key ID: it takes the name of an environment variable that holds the credential, never the credential itself", e.field))
		case !envName.MatchString(e.name):
			out = append(out, fmt.Sprintf("Credentials.%s is not the name of an environment variable (letters, digits and '_', not starting with a digit): it takes the variable's name, never the credential itself", e.field))
		}
	}
	if (c.AccessKeyIDEnv == "") != (c.SecretAccessKeyEnv == "") {
		out = append(out, "Credentials.AccessKeyIDEnv and SecretAccessKeyEnv must be set together (or both left empty for the default credential chain)")
	}
	if c.SessionTokenEnv != "" && c.AccessKeyIDEnv == "" {
		out = append(out, "Credentials.SessionTokenEnv needs AccessKeyIDEnv and SecretAccessKeyEnv")
	}
	if (c.File != "" || c.Profile != "") && c.AccessKeyIDEnv != "" {
		out = append(out, "Credentials.File and Profile exclude the environment variables: name one place for the credentials")
	}
	return out
}

// fromEnv reports whether c names environment variables.
func (c Credentials) fromEnv() bool { return c.AccessKeyIDEnv != "" }

// provider reads the credentials c names on this machine: a static
// provider for the environment variables, nil for the default chain or a
// file (which the configuration loader reads, see s3call.ClientOptions).
// Its error names the variable or file, never a value.
func (c Credentials) provider() (aws.CredentialsProvider, error) {
	if c.File != "" {
		if _, err := os.Stat(c.File); err != nil {
			return nil, c.missing(fmt.Sprintf("Config.Credentials.File %s cannot be read on this machine (%v)", c.File, err))
		}
	}
	if !c.fromEnv() {
		return nil, nil
	}
	read := func(field, name string) (string, error) {
		v, ok := os.LookupEnv(name)
		if !ok || strings.TrimSpace(v) == "" {
			return "", c.missing(fmt.Sprintf("Config.Credentials.%s names the environment variable %s, which is not set on this machine", field, name))
		}
		return strings.TrimSpace(v), nil
	}
	id, err := read("AccessKeyIDEnv", c.AccessKeyIDEnv)
	if err != nil {
		return nil, err
	}
	secret, err := read("SecretAccessKeyEnv", c.SecretAccessKeyEnv)
	if err != nil {
		return nil, err
	}
	var token string
	if c.SessionTokenEnv != "" {
		if token, err = read("SessionTokenEnv", c.SessionTokenEnv); err != nil {
			return nil, err
		}
	}
	return credentials.NewStaticCredentialsProvider(id, secret, token), nil
}

// missing is the error of credentials not found here.
func (c Credentials) missing(what string) error {
	host, _ := os.Hostname()
	return fmt.Errorf("s3once sink: %s (host %s, pid %d): set it for every process that runs the pipeline's workers (their own environment or machine, never the pipeline's options, which travel in its graph): %w",
		what, host, os.Getpid(), ErrCredentialsMissing)
}
