// Command workerboot starts a Go SDK worker for a Beam job server's PROCESS
// environment, as the boot program of Beam's Go worker container does on
// Flink or Spark: the job server runs it with --id and
// --provision_endpoint; it asks the provision service for the job's
// endpoints and options, fetches the worker binary the submitting program
// staged, and runs that binary in worker mode. The worker is a process of
// its own, with its own environment (its own AWS credentials): nothing but
// the pipeline (the DoFns' JSON) and its options reaches it from the
// submitting program.
//
// Unlike the container's boot program, it keeps what it fetches in one fresh
// directory under $TMPDIR, so two runs never share a staging path, and
// removes the staged binary (the bulk of it, some 150 MB) as soon as the
// worker runs from it: the running worker keeps its file, and nothing large
// stays behind even when the job server SIGKILLs the boot program, as prism
// does at the end of every job (it then logs "process failed while
// running: signal: killed" at ERROR; the job's outcome is the job's own).
// The pipeline options reach the worker as a flag, not a file. What a kill
// leaves is the empty directory, which the boot program otherwise removes
// when the worker ends.
//
// Usage, in a pipeline's flags:
//
//	--runner=universal --endpoint=127.0.0.1:PORT --worker_binary=PIPELINE_BINARY \
//	  --environment_type=PROCESS --environment_config='{"command":"/path/to/workerboot"}'
//
// It prints one line on stderr when the worker starts ("workerboot: worker
// ID: running staged binary NAME (N bytes) as pid P"), which the
// integration tests look for.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/container/tools"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/artifact"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"google.golang.org/protobuf/proto"
)

func main() {
	id := flag.String("id", "", "worker ID given by the job server (required)")
	provision := flag.String("provision_endpoint", "", "the job server's provision service (required)")
	flag.Parse()
	code, err := run(unquote(*id), *provision)
	if err != nil {
		fmt.Fprintf(os.Stderr, "workerboot: worker %s: %v\n", *id, err)
	}
	os.Exit(code)
}

// unquote strips one pair of single quotes around the worker ID: prism
// v2.77 passes --id='ID', quoted as for a shell, yet starts the program
// without one, and its provision service knows the ID without the quotes.
func unquote(id string) string {
	if len(id) >= 2 && strings.HasPrefix(id, "'") && strings.HasSuffix(id, "'") {
		return id[1 : len(id)-1]
	}
	return id
}

// run boots one worker and returns the exit code to end with.
func run(id, provision string) (int, error) {
	if id == "" || provision == "" {
		return 2, errors.New("--id and --provision_endpoint are required (the job server passes them)")
	}
	ctx, cancel := context.WithTimeout(grpcx.WriteWorkerID(context.Background(), id), 2*time.Minute)
	defer cancel()
	info, err := tools.ProvisionInfo(ctx, provision)
	if err != nil {
		return 1, fmt.Errorf("provision info: %w", err)
	}
	logging, control, artifacts := info.GetLoggingEndpoint().GetUrl(), info.GetControlEndpoint().GetUrl(), info.GetArtifactEndpoint().GetUrl()
	if logging == "" || control == "" || artifacts == "" {
		return 1, fmt.Errorf("the provision info lacks an endpoint (logging %q, control %q, artifact %q)", logging, control, artifacts)
	}

	dir, err := os.MkdirTemp("", "s3once-worker-*")
	if err != nil {
		return 1, fmt.Errorf("worker directory: %w", err)
	}
	defer os.RemoveAll(dir)

	staged := filepath.Join(dir, "staged")
	got, err := artifact.Materialize(ctx, artifacts, info.GetDependencies(), info.GetRetrievalToken(), staged)
	if err != nil {
		return 1, fmt.Errorf("fetch the staged files: %w", err)
	}
	name, err := workerArtifact(got)
	if err != nil {
		return 1, err
	}
	bin := filepath.Join(staged, name)
	st, err := os.Stat(bin)
	if err != nil {
		return 1, fmt.Errorf("staged worker binary: %w", err)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		return 1, fmt.Errorf("staged worker binary: %w", err)
	}

	options, err := tools.ProtoToJSON(info.GetPipelineOptions())
	if err != nil {
		return 1, fmt.Errorf("pipeline options: %w", err)
	}

	cmd := exec.Command(bin,
		"--worker=true",
		"--id="+id,
		"--logging_endpoint="+logging,
		"--control_endpoint="+control,
		"--semi_persist_dir="+dir,
		"--options="+options,
	)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	if caps := info.GetRunnerCapabilities(); len(caps) > 0 {
		cmd.Env = append(cmd.Env, "RUNNER_CAPABILITIES="+strings.Join(caps, " "))
	}
	if status := info.GetStatusEndpoint().GetUrl(); status != "" {
		cmd.Env = append(cmd.Env, "STATUS_ENDPOINT="+status)
	}
	// The job server stops a worker by killing its boot program: the worker
	// goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("start the worker: %w", err)
	}
	fmt.Fprintf(os.Stderr, "workerboot: worker %s: running staged binary %s (%d bytes) as pid %d\n", id, name, st.Size(), cmd.Process.Pid)
	// The worker runs from its open file (and reads its symbols through
	// /proc/self/exe): the name can go now.
	if err := os.Remove(bin); err != nil {
		fmt.Fprintf(os.Stderr, "workerboot: worker %s: remove the staged binary: %v\n", id, err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if exit.Exited() {
			return exit.ExitCode(), nil
		}
		return 1, fmt.Errorf("the worker ended: %w", err)
	}
	if err != nil {
		return 1, fmt.Errorf("the worker: %w", err)
	}
	return 0, nil
}

// workerArtifact names the staged Go worker binary among the job's
// artifacts: the one in the Go worker role, or the only one.
func workerArtifact(got []*pipepb.ArtifactInformation) (string, error) {
	for _, a := range got {
		if a.GetRoleUrn() == artifact.URNGoWorkerBinaryRole {
			return filePath(a)
		}
	}
	if len(got) == 1 {
		return filePath(got[0])
	}
	return "", fmt.Errorf("no Go worker binary among the %d staged files", len(got))
}

// filePath is where a fetched file artifact lies, relative to the staging
// directory.
func filePath(a *pipepb.ArtifactInformation) (string, error) {
	if a.GetTypeUrn() != artifact.URNFileArtifact {
		return "", fmt.Errorf("staged worker binary: artifact type %q, want %q", a.GetTypeUrn(), artifact.URNFileArtifact)
	}
	var fp pipepb.ArtifactFilePayload
	if err := proto.Unmarshal(a.GetTypePayload(), &fp); err != nil {
		return "", fmt.Errorf("staged worker binary: %w", err)
	}
	if fp.GetPath() == "" || !filepath.IsLocal(fp.GetPath()) {
		return "", fmt.Errorf("staged worker binary: path %q is not inside the staging directory", fp.GetPath())
	}
	return fp.GetPath(), nil
}
