// Command s3once is the operator's tool for s3once sinks.
//
//	s3once sweep   --bucket B --prefix P --older-than AGE [--dry-run] ...
//	s3once inspect [--base64 TOKEN | FILE | -]
//	s3once inspect --bucket B --key K [--upload-id U] [--json] ...
//	s3once verify  --bucket B --prefix P [--json] ...
//
// sweep aborts the multipart uploads and deletes the side objects that crashed
// or abandoned writers left behind, judging ages by the server's clock.
// inspect decodes a resume or commit token (as kept in a checkpoint) and prints
// it as JSON; with --bucket and --key it describes, reading only, what the
// bucket holds for one key: the object, the key's open uploads with their
// parts and side objects, and what s3once would do with each.
//
// Credentials and region come from the standard AWS chain (environment,
// shared config and credentials files, SSO, instance roles); --s3-endpoint
// (or --endpoint) and --path-style point the tool at S3-compatible servers.
//
// Exit codes, for scripts:
//
//	0  success (warnings may have been printed)
//	1  the operation failed, in whole or in part (S3 errors, items that could
//	   not be swept, a token that does not decode)
//	2  usage error: unknown command, bad or missing flags
//	3  verify only: could not verify (an S3 call failed), no problem found
//
// For verify, 1 means problems found in the folder.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what a command reads and writes.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// usageError marks an error in the command line: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// exitError ends a command with its own exit code, after it printed its
// report.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

const mainUsage = `s3once: the operator's tool for s3once exactly-once S3 sinks.

Usage:
  s3once sweep   --bucket B --prefix P --older-than AGE [--dry-run] [flags]
  s3once inspect [--base64 TOKEN | FILE | -]
  s3once inspect --bucket B --key K [--upload-id U] [--json] [flags]
  s3once verify  --bucket B --prefix P [--json] [flags]
  s3once help [command]

Commands:
  sweep    abort stale multipart uploads and delete stale side objects
  inspect  decode a resume or commit token and print it as JSON, or describe
           a key's object, open uploads and side objects (read only)
  verify   prove that an output folder holds exactly its runs' files: each
           partition against its manifest, markers, no upload left (read only)

Credentials and region come from the standard AWS chain (AWS_PROFILE,
AWS_REGION, ~/.aws/config, SSO, instance roles, ...).

Exit codes: 0 success, 1 operation failed (verify: problems found),
2 usage error, 3 verify could not verify.
Run 's3once <command> --help' for a command's flags.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage)
		return exitUsage
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "sweep":
		err = sweepCmd(ctx, e, rest)
	case "inspect":
		err = inspectCmd(ctx, e, rest)
	case "verify":
		err = verifyCmd(ctx, e, rest)
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 && rest[0] != "help" {
			return run(ctx, []string{rest[0], "--help"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, mainUsage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "s3once: unknown command %q\n\n%s", cmd, mainUsage)
		return exitUsage
	}
	var ue *usageError
	var xe *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &xe):
		fmt.Fprintf(stderr, "s3once %s: %s\n", args[0], xe.msg)
		return xe.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s\nRun 's3once %s --help' for usage.\n", prefixed(args[0], err), args[0])
		return exitUsage
	default:
		fmt.Fprintln(stderr, prefixed(args[0], err))
		return exitFail
	}
}

// prefixed is err's message after "s3once <cmd>: ", unless it already
// starts with the command's name (the committer's errors name the sweep).
func prefixed(cmd string, err error) string {
	msg, name := err.Error(), "s3once "+cmd
	if strings.HasPrefix(msg, name+" ") || strings.HasPrefix(msg, name+":") {
		return msg
	}
	return name + ": " + msg
}
