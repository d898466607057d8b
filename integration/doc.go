// Package integration holds s3once's end-to-end tests: the example pipelines
// and a token-keeping writer run as child processes against a real S3 server
// (versitygw) on 127.0.0.1, and are killed, starved and cut off on purpose.
//
//   - TestPipelineCrashLoop: the batch example is SIGKILLed at seeded random
//     moments (timers, and protocol points seen on the wire: after the k-th
//     persist, inside the k-th commit, during the k-th part upload) and run
//     again; the final objects equal those of an uninterrupted run, byte for
//     byte, and a sweep leaves no upload or side object behind.
//   - TestTokenRecoveryAcrossProcessDeath: a writer keeps its resume tokens
//     in a durable file and is SIGKILLed at random; resuming from the last
//     token yields the exact object.
//   - TestServerCrash: the S3 server is SIGKILLed mid-run (inside a commit,
//     during a part upload, during a persist, or during a random call of
//     the run), restarted with its repair step; a rerun gives the exact
//     output.
//   - TestNetworkFaults: toxiproxy between the pipeline and the server adds
//     latency, limits bandwidth, resets connections and stalls them; every
//     run ends with the exact output or a clear error and no wrong object,
//     and a rerun without the fault is exact.
//   - TestBadConfiguration: unreachable endpoint, wrong credentials, missing
//     bucket, invalid prefix, records too large: a clear message, a non-zero
//     exit, nothing written.
//   - TestStreamingExample: files per window, the same bytes on a rerun, and
//     windows committed while a live, unbounded run goes on.
//   - TestJobServer: the batch example and the bounded streaming example
//     submitted with --runner=universal to Beam's standalone prism job
//     server (its own process), their DoFns run by worker processes that
//     internal/workerboot starts from the staged binary (a PROCESS
//     environment, as a Beam worker container on Flink); the output equals
//     an embedded-runner run's, byte for byte.
//   - TestWorkerKillLoop: on the same job server, the job's worker process
//     is SIGKILLed at random moments (or at a random completion, through
//     the tap) and the job submitted again, under --timeout, until it
//     succeeds; each attempt's kill and outcome (failure or timeout) is
//     reported, the files equal an uninterrupted run's, and a file an
//     attempt that died committed is never committed again.
//   - TestThrottleStorm, TestThrottleBudgetExhausted: the batch example
//     through a proxy that answers 503 SlowDown below the SDK's retryer
//     (internal/testkit/slowdown): a 30 s storm costs time only; an endless one
//     fails the run with [s3once:throttled] after the ThrottleBudget, and a
//     rerun completes exactly.
//   - TestZombieWriter: a writer stopped (SIGSTOP) while a proxy holds its
//     part upload, side-object PUT, completion or clean-up, woken after a
//     rerun committed everything, with a sweep running; its late request
//     changes nothing.
//
// The child programs are built once per test process, without the race
// detector; the mutation tests (files with the s3once_mutant build tag)
// build them a second time with the tag and switch a bug on through
// S3ONCE_MUTANT. S3ONCE_CRASH_LOOPS sets the number of crash loops
// (default 5; `make soak` runs 100), S3ONCE_WORKER_KILL_LOOPS the number of
// worker-kill loops (default 3; `make soak` runs 20).
//
// Every test here calls t.Parallel: each starts its own server, proxy and
// child processes on free loopback ports and shares nothing but the built
// children, and most of its time is spent waiting on them (timers, backoff,
// killed and restarted jobs), so two at a time overlap their waits.
package integration
