// Package explore runs s3once's real protocol code (the recoverable stream
// and the committer) over the in-memory S3 (internal/testkit/s3mem) under every
// schedule within stated bounds, and checks each schedule's outcome.
//
// # How a schedule runs
//
// Each schedule runs in a testing/synctest bubble of its own. The Fake's
// Gate holds every request of the workload's clients; when every goroutine
// of the bubble is blocked (a quiescent point), the scheduler releases one
// held request, so a schedule is a deterministic sequence of releases
// whatever the goroutines' timing. The held requests are sorted by client,
// operation, key, upload and part; the default release is the first held
// request of the client released last, or the first one held if that
// client holds none. When nothing is held and the workload is not done, the
// scheduler blocks too, and the bubble's clock jumps to the next timer:
// backoffs and call timeouts cost no real time.
//
// A Plan is where a schedule departs from the default: at chosen releases,
// which held request goes (its index in the sorted list) and which fate it
// meets (an s3mem.Kind: a crash before sending or after the server applied
// it, 500, 503, 409, a hang before or after applying, a reply of 500 for a
// request that lands late behind the client's next PUT, a crash after a
// completion whose object shows a minute after its upload went). It prints
// as its departures joined by "+": "step13-conflict" (the default request
// meets a 409), "step07@1" (the second held request goes instead),
// "step05@0+step09-crash-after-apply", or "default"; "/sweep" is appended
// when a sweep runs between steps.
//
// # Enumeration and bounds
//
// Explore runs the default schedule, then, depth first, every plan that
// departs from a run schedule after its last departure: at each later
// release, each other held request, and each fate of the bounds for the
// default request or another. Releasing a request of another client than
// the one released last, while that client still holds one, is a
// preemption. Bounds cap the preemptions per schedule, the departures from
// the default release (preempting or not: concurrent part uploads of one
// client reorder without preempting, and those orders multiply fastest),
// and the faults per schedule (their fates, and the operations they may
// hit). Each sequence of choices within the bounds runs once;
// TestExploreDuplicateCommit checks that no two schedules make the same
// releases and that the preemption bound is reached.
//
// # The workloads and their recovery
//
// Both write files through recoverable streams (three 5 MiB parts and a
// tail each; persists at 1.3 and 2.6 parts, tails in side objects), close
// them and commit them, the files one after the other. DefaultStream ("one")
// is one file. IssueWorkload ("issue") is the workload the bounds are
// stated for: two files, one rollback and one duplicate commit. Rollback:
// once the first file is committed, the job restarts from the checkpoint
// that held that file's older resume token; its recovery finds the upload
// gone and writes the file again from its first byte under a new upload,
// as the sink's writer does (recoverable.ErrNoSuchUpload,
// ErrSideObjectMissing, ErrTailCorrupt or ErrPartsChanged call for it), and
// the commit finds the file committed. Duplicate: the second file is
// committed by two committers with clients of their own at once (the
// finalization fast path and the commit stage), and both must succeed.
//
// Each attempt is a process with a client of its own; a crash ends it (the
// Fake black-holes its client; its context is cancelled, so requests it
// still had held are dropped). The next attempt resumes, per file, from the
// last checkpoint taken: the commit token (CommitAfterRecovery), else the
// resume token (Recover, then the rest of the bytes again), else from the
// start. A Persist that fails without a crash is no checkpoint; the writer
// goes on and checkpoints at the next cut. At most six attempts.
//
// # Checks
//
// After the run, with the server's clock two hours on (whatever was still
// landing has landed): every file holds exactly its bytes; no file is
// missing, and the output holds nothing but the files and the decoys (none
// duplicated under another name); no attempt reported a file's data lost
// while its upload was in place or while the file ends up there, whole; no
// attempt aborted an upload a checkpoint references before its file was
// committed; no recovery failed while its upload was open (a checkpoint
// damaged by s3once itself); every request of the workload named a key that
// internal/ownkeys calls s3once's own (one of the files, a side object or
// a probe under the staging prefix); seven decoys (neighbours of a file's
// key, a child of it, look-alikes of the staging prefix, another job's file
// with an s3once name) are untouched. Then a sweep leaves no upload and no
// side object, and the decoys still.
//
// # Mutants
//
// internal/mutant switches past bugs back into the real code, off unless a
// test turns them on (committer/mutation_on.go, recoverable/mutation_on.go).
// The switches exist only in builds with the s3once_mutant tag, so the
// TestMutant* tests are in files with that tag: make test and make explore
// run them with -tags s3once_mutant, and a plain go test leaves them out.
// Each TestMutant* test searches a fixed list of schedules, stops at the first
// that catches its bug, logs the schedule and its replay command, and
// checks the same schedule passes with the bug off:
//
//   - AbortOn409 (a 409 on the completion aborted the token's upload):
//     step13-conflict, an aborted checkpointed upload;
//   - DropTail (recovery forgot the tail): step04-crash-before-send,
//     a file short of its tail;
//   - ShortSettle (the gone-upload settle window gave up after seconds):
//     step13-crash-lagged, a completion whose object shows a minute
//     after the upload went, claimed lost;
//   - ReusePersistKey (a failed Persist gave its side-object key to the
//     next): step02-late+step06-crash-before-send, a side-object PUT
//     that lands behind the next Persist's, then a crash; the newer token
//     no longer recovers though its upload is open.
//   - NoThrottleBackoff (SlowDown answers without the shared backoff and
//     the budget, and the SDK's retry quota back): step03-slowdown, a
//     SlowDown on a part upload that breaks the stream and costs the file
//     a second attempt, where TestExploreSlowDown wants none.
//
// # Replaying a schedule
//
// A failing schedule prints its plan (e.g. step13-conflict), its
// workload, its release trace, and the command that runs it again:
//
//	S3ONCE_REPLAY=step13-conflict S3ONCE_REPLAY_WORKLOAD=one \
//	  go test -count=1 -run '^TestReplay$' -v ./internal/testkit/explore/
//
// with S3ONCE_REPLAY_BUG=<bug> and -tags s3once_mutant for a mutant. A
// schedule is a function of its plan: the same plan gives the same releases every run, except after
// a completion that shows late, whose polls vary (see make explore below).
//
// # Bounds
//
// Each test prints the number of schedules it explored and its bounds. The
// ordering bounds are a preemption bound and a bound on departures from
// the default release: 1 and 1 in make test, 2 and 2 in make explore
// (every preemption is a departure, so the smaller one rules). The one-file
// workload has one client at a time: its orders are its part uploads' and
// side-object PUTs' (two in flight), without preemptions; the duplicate
// commit and the two-file workload have two clients at once.
//
// make test (quick; at most one fault per schedule): TestExploreQuick, one
// file, every order within the bounds crossed with a crash after the server
// applied the request at every release (58 schedules);
// TestExploreConflictOnComplete, a 409 on each completion of every order
// (6); TestExploreDuplicateCommit, every order of one file committed twice
// at once (13, 10 with a preemption); TestExploreIssue, every order of the
// two-file workload with its rollback and duplicate (15, 8 with a
// preemption), then a crash after each completion and abort in the default
// order (4); TestExploreSweepBetween, a sweep at every quiescent point,
// with a crash after each side-object or probe PUT and completion (6); the
// default schedule and the five mutants' searches (about 20);
// TestExploreSlowDown, a 503 SlowDown at every release of the default order
// (18), none of which may cost an attempt: the clients carry a Throttle, as
// s3call.NewClient's do.
//
// # What a schedule costs
//
// A schedule moves some 16 MiB per file written through the real stream,
// and under -race every byte copied is checked by the race detector, which
// costs more when the memory is fresh. So the files are made once per
// process and shared (their CRCs, taken when made, are checked after every
// schedule: nothing may write them); the Fake keeps a completed upload's
// parts as they are instead of copying them into one buffer, and computes
// full-object checksums over the parts; the checks compare the files where
// the Fake holds them (s3mem's Stored) instead of reading 16 MiB back
// through a client; and after each schedule the Fake gives its body buffers
// to the next schedule's (Release), so parts are read into memory that was
// used before. With -race, a schedule of the one-file workload costs about
// 0.35 s of CPU and one of the two-file workload about 1 s (from about 1.5
// and 6 s before); without -race, 0.1 and 0.25 s.
//
// Where the rest goes (perf, TestExploreQuick with -race): the stream's
// copy of the written bytes into its part buffers, a third of the samples
// (each attempt's Writer allocates its buffers afresh, and fresh memory is
// what the race detector makes dear; a buffer source shared by the
// attempts' Writers would save most of it, but that is recoverable's); the
// Fake's read of each request body, a fifth (one copy is needed: the
// writer reuses its buffers); the MD5s of the parts' ETags, a tenth
// (remembering them by content, checked byte for byte, saved nothing
// measurable, and was left out); the
// stream's read of tails on recovery, 5%; the SDK's own work per request,
// little.
//
// Measured with -race on 2 cores beside two busy loops and other work
// (load average 14 to 23): the package took 52.5 s of CPU (37.2 s user,
// 15.3 s system; it had taken some 5 minutes), in 400 s of wall time, as
// it got about an eighth of one core. Beside the two loops alone it would
// get about one core, so some 60 s (an estimate: the machine was never that
// quiet while measuring). Without -race: 14 s of CPU, 18 s of wall time
// under a load average of 12.
//
// The preemption bound of 2 (with two departures) in make test does
// not fit 2 minutes: without -race it counts 143 schedules of the two-file
// workload (139 orders, 117 preempting, and the 4 crashes), 115 of the
// duplicate commit (111 preempting), 84 for TestExploreQuick and 8 for the
// 409s, some 375 with the rest, 34 s of CPU; with -race TestExploreQuick
// alone took 29.8 s of CPU at that bound (84 schedules), and the package
// would need some 230 s, the two-file orders 140 of them. So make test
// keeps preemption 1 and one departure, the largest bound that fits; make
// explore runs preemption 2.
//
// make explore (S3ONCE_EXPLORE=wide; at most two faults per schedule):
// TestExploreTwoFaults, one file, default order, a first fault of each of
// the nine fates at every release, then a crash before sending at every
// later release; TestExploreIssue, every order of the two-file workload
// within the wide bounds, fault-free, then two faults in the default
// order: a crash after applying at every release, then another at every
// later completion and abort; TestExploreQuick, every fate but 409 at
// every release of every order within the quick bounds;
// TestExploreConflictOnComplete, a 409 at every release of the same
// orders; TestExploreDuplicateCommit, every order within the wide bounds,
// then a crash after applying at every release of the quick bounds'
// orders; TestExploreSweepBetween, every fate at every release with sweeps
// between steps, and the two-file workload with a crash after applying at
// every release. Measured in full (no -race; niced, on 2 cores with a load
// average of 8 to 15 from other work): 3,186 schedules, none with a
// violation, in 340 s of test time. TestExploreTwoFaults: 1,802 schedules,
// 157 s; TestExploreIssue: 139 orders (117 preempting) and 143 two-crash
// schedules, 57 s; TestExploreSweepBetween: 154 + 56, 34 s;
// TestExploreQuick: 429, 42 s; TestExploreConflictOnComplete: 56, 13 s;
// TestExploreDuplicateCommit: 292 with a crash and 115 orders (111
// preempting), 37 s.
//
// Every schedule is a function of its plan: the attempts' contexts come
// from s3call.WithoutJitter, so a committer that polls while a late
// completion lands waits the longest backoff each time instead of a random
// one, and makes the same number of polls in every run. (With jitter, the
// plan step13-crash-lagged made 41 to 43 releases from run to run, and a
// plan derived from one run could not be replayed by another.)
//
// Not explored: more than two faults per schedule; two faults crossed with
// orders other than the default; orders beyond two departures from the
// default release. Zombie writers and dropped or delayed finalization
// callbacks are the sink's runner model's (sink/runner_model_test.go), at
// the Beam level over the real server.
package explore
