package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/mutant"
	"github.com/s3once/s3once/internal/testkit/folderoracle"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// Environment variables of TestScenarios.
const (
	// envCount is how many random sequences to run (default
	// defaultSequences); make soak raises it.
	envCount = "S3ONCE_SCENARIOS"
	// envSeed fixes the seed the random sequences' seeds are drawn from.
	envSeed = "S3ONCE_SCENARIO_SEED"
	// envSeeds runs only the listed sequence seeds (comma-separated): what
	// a failure's reproduction line sets.
	envSeeds = "S3ONCE_SCENARIO_SEEDS"
)

// pinnedSeeds are sequence seeds that reached states worth keeping in every
// run (see docs/testing.md).
var pinnedSeeds = []uint64{
	8129134725048776860,  // one shard of full files; a superset rerun with records sorting after all others
	5524346259747696979,  // an output-version-2 folder's marker deleted, then a run with OutputVersion 1
	1295335560491600306,  // an output-version-1 folder without a marker; a file deleted; then other Format and Shards
	14535915274626020834, // an output-version-1 folder: a shard's last file, of one record, copied to the next index (verify --read)
	15739136229219550427, // a partition manifest deleted, then a rerun keeping its full files and adding one: taken, as after a crash before the manifest
}

// fullFilesBias marks a sequence seed (its top bit) whose input changes
// lean towards records sorting after a partition of full files (a third
// of the steps of such settings, and to a destination of full files where
// there is one): a complete partition that would grow while keeping every
// old file, which only its manifest tells. Random seeds carry it; the
// pinned ones were drawn before it and run as they were drawn.
const fullFilesBias = uint64(1) << 63

// versitygwShare: one sequence in versitygwShare runs on versitygw, the
// rest on the in-memory server.
const versitygwShare = 5

const (
	bucket = "scenario"
	prefix = "out"
)

// outcome is what the model expects of a run.
type outcome int

const (
	accept     outcome = iota // must succeed, its partitions exact
	refuse                    // must fail and commit nothing
	refuseWeak                // FinalizeCommit "always": must fail; what it committed must be named by verify
	either                    // a damaged folder: refused and nothing committed, or accepted and right
)

func (o outcome) String() string {
	return [...]string{"accept", "refuse", "refuse (weaker guarantee)", "either"}[o]
}

// model is what the test knows of the folder: which run owns each
// destination's partition, the settings it was created with, and the
// settings marker the first run wrote.
type model struct {
	cfg     *settings           // nil: no run has written here
	owners  map[string][]string // destination -> records of the run whose partition it is
	ownerOf map[string]string   // destination -> the run's name
	extOf   map[string]string   // destination -> the owning run's extension
	marker  []byte              // the settings marker as first written; nil: unchecked
	legacy  bool                // the folder lost its marker as an earlier release's has none
	damaged string              // damage done by hand and not yet repaired by a run
	// unclosed holds the destinations whose manifest damage deleted: to
	// the sink such a partition is one whose run has not finished, so a
	// rerun that keeps every file of it and adds more may be taken.
	unclosed map[string]bool
	last     *runSpec // the last run that succeeded
}

type runSpec struct {
	name  string
	cfg   settings
	input []string
	what  string // how it was drawn
}

// unclose notes that the partition manifest at key (relative to the
// folder) is gone.
func (m *model) unclose(key string) {
	if d, _, ok := strings.Cut(key, "/_s3once_manifest-"); ok {
		if m.unclosed == nil {
			m.unclosed = map[string]bool{}
		}
		m.unclosed[d] = true
	}
}

// expect is the model's verdict on r.
func (m *model) expect(r runSpec) outcome {
	if m.cfg == nil {
		return accept
	}
	if r.cfg.OutputVersion == 1 && r.cfg.FinalizeCommit == "always" {
		// Output version 1 is written only through the run-wide barrier:
		// the configuration is refused (docs/guarantees.md).
		return refuse
	}
	if r.cfg.bytesKey() != m.cfg.bytesKey() {
		if len(r.input) == 0 {
			return either
		}
		return refuse
	}
	open := false
	for d, recs := range byDest(r.input) {
		old, ok := m.owners[d]
		if !ok || sameMultiset(old, recs) {
			continue
		}
		if m.cfg.OutputVersion == 1 || m.unclosed[d] {
			// Output version 1 keeps no manifest, and a partition whose
			// manifest was deleted has none, so nothing closes it: a
			// rerun whose files include every file the partition holds,
			// unchanged, is taken, and the partition is then the
			// rerun's (docs/guarantees.md).
			open = true
			continue
		}
		if finalizes(r) {
			// Files committed at bundle finalization, before any
			// barrier (docs/guarantees.md).
			return refuseWeak
		}
		return refuse
	}
	if open || m.damaged != "" {
		return either
	}
	return accept
}

func sameMultiset(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// expectation is what the oracle judges the folder against.
func (m *model) expectation() folderoracle.Expect {
	e := folderoracle.Expect{Candidates: map[string][]folderoracle.Candidate{}, Settings: m.marker}
	for d, recs := range m.owners {
		e.Candidates[d] = []folderoracle.Candidate{{Run: m.ownerOf[d], Ext: m.extOf[d], Records: recs}}
	}
	e.Manifests = m.cfg != nil && m.cfg.OutputVersion == 2
	return e
}

// own records r's partitions as r's (it succeeded, or crashed after the
// model accepted it).
func (m *model) own(r runSpec) {
	if m.cfg == nil {
		c := r.cfg
		m.cfg = &c
	}
	for d, recs := range byDest(r.input) {
		m.owners[d], m.ownerOf[d], m.extOf[d] = recs, r.name, r.cfg.ext()
		delete(m.unclosed, d)
	}
}

// env is one sequence's folder: a server, the proxy the sink reaches it
// through, and a client of the test's own.
type env struct {
	proxy  *proxy
	client *s3.Client
	server string // "mem" or "versitygw"
	bucket string
}

// failure is one property a sequence broke.
type failure struct {
	kind  string // the property broken
	class string // the known gap it shows (classify)
	text  string
}

// sequence runs one seeded sequence and returns what it broke.
type sequence struct {
	t        *testing.T
	seed     uint64
	r        *rand.Rand
	env      *env
	m        *model
	runs     int
	log      []string
	failures []failure
	verify   *verifier
	notes    map[string]int
	// lastDamage is the sequence's latest damage, for classify.
	lastDamage string
}

func (s *sequence) fail(kind, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	s.failures = append(s.failures, failure{kind: kind, text: text, class: classify(kind, s.lastDamage, text)})
}

// classify names the known gap a failure shows, for the summary: the
// issue's list of ways a folder was found wrong or verify fooled.
func classify(kind, damage, text string) string {
	switch {
	case kind == "upload-left":
		return "uploads left after a crash and a rerun"
	case kind == "verify-ok-on-wrong" && strings.Contains(text, "records; it holds"):
		return "verify trusts manifest record counts"
	case kind == "verify-ok-on-wrong" && strings.Contains(text, "no manifest"):
		return "verify passes a partition without its manifest"
	case kind == "verify-ok-on-wrong" && strings.Contains(text, "settings marker"):
		return "verify passes a damaged settings marker"
	case strings.HasPrefix(kind, "verify"):
		return "verify passes a wrong folder"
	case strings.HasPrefix(damage, "marker"):
		return "a damaged settings marker accepted"
	case damage == "legacy":
		return "a folder without a marker takes other settings"
	case strings.Contains(text, "superset"):
		return "a changed rerun grows a complete partition"
	case damage != "":
		return "a damaged partition accepted"
	}
	return kind
}

func (s *sequence) step(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	s.log = append(s.log, line)
}

// TestScenarios runs seeded sequences of 2 to 4 runs of sink.Write against
// one folder each, with input changes, settings changes, damage between
// runs and crashes between S3 calls, and checks each state with the
// independent oracle and with s3once verify (see the package
// documentation).
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("the scenario generator runs pipelines on prism")
	}
	start := time.Now()
	seeds, pinned := sampleSeeds(t, envCount, defaultSequences, pinnedSeeds)
	for i := pinned; i < len(seeds) && os.Getenv(envSeeds) == ""; i++ {
		seeds[i] |= fullFilesBias
	}
	v := newVerifier(t)
	runs := 0
	kinds := map[string]int{}
	notes := map[string]int{}
	failed := 0
	for i, seed := range seeds {
		s := runSequence(t, seed, v)
		runs += s.runs
		for k, n := range s.notes {
			notes[k] += n
		}
		if !report(t, "TestScenarios", i, i < pinned, seed, s.env.server, s.runs, s.log, s.failures) {
			continue
		}
		failed++
		seen := map[string]bool{}
		for _, f := range s.failures {
			if !seen[f.class] {
				kinds[f.class]++
				seen[f.class] = true
			}
		}
	}
	summary := fmt.Sprintf("scenarios: %d sequences (%d pinned), %d pipeline runs (%s each on average), %d verify runs, %s; %d sequences failed %v; verify stricter than the oracle: %v",
		len(seeds), pinned, runs, runTime.mean(), v.calls, time.Since(start).Round(time.Second), failed, kinds, notes)
	t.Log(summary)
	fmt.Println(summary)
}

// report logs sequence i of test, or, where it broke properties, fails the
// test with its steps, what it broke and a line that runs it again; it
// returns whether it failed.
func report(t *testing.T, test string, i int, pinned bool, seed uint64, server string, runs int, log []string, failures []failure) bool {
	label := "random"
	if pinned {
		label = "pinned"
	}
	if len(failures) == 0 {
		t.Logf("sequence %d (%s, seed %d, %s, %d runs): ok: %s", i, label, seed, server, runs, strings.Join(log, " | "))
		return false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sequence %d (%s, seed %d, %s) broke %d properties:\n  steps: %s\n", i, label, seed, server, len(failures), strings.Join(log, "\n         "))
	for _, f := range failures {
		if f.class != f.kind {
			fmt.Fprintf(&b, "  [%s: %s] %s\n", f.kind, f.class, f.text)
		} else {
			fmt.Fprintf(&b, "  [%s] %s\n", f.kind, f.text)
		}
	}
	fmt.Fprintf(&b, "  reproduce: %s=%d go test -race -count=1 -run '^%s$' ./internal/testkit/scenario/", envSeeds, seed, test)
	t.Error(b.String())
	return true
}

// sampleSeeds is a test's sequence seeds: those envSeeds lists, or the
// pinned ones and then count random ones (countVar's value, or def),
// drawn from the master seed. It returns how many are pinned.
func sampleSeeds(t *testing.T, countVar string, def int, pinnedSeeds []uint64) (seeds []uint64, pinned int) {
	if list := os.Getenv(envSeeds); list != "" {
		for _, f := range strings.Split(list, ",") {
			v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q is not a seed", envSeeds, f)
			}
			seeds = append(seeds, v)
		}
		return seeds, 0
	}
	count := def
	if v := os.Getenv(countVar); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("%s=%q: want a count of sequences", countVar, v)
		}
		count = n
	}
	master := masterSeed(t)
	seeds = slices.Clone(pinnedSeeds)
	mr := rand.New(rand.NewPCG(master, 0x5ce9a))
	for range count {
		seeds = append(seeds, mr.Uint64()>>1)
	}
	return seeds, len(pinnedSeeds)
}

// hasManifest reports whether the folder holds a partition manifest.
func hasManifest(snap *folderoracle.Snapshot) bool {
	for rel := range snap.Objects {
		if _, _, ok := folderoracle.ParseManifest(rel); ok {
			return true
		}
	}
	return false
}

// masterSeed is the seed the random sequences' seeds are drawn from:
// envSeed's, or a fresh one; it is logged, for a rerun.
func masterSeed(t *testing.T) uint64 {
	master := uint64(time.Now().UnixNano())
	if v := os.Getenv(envSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want a number", envSeed, v)
		}
		master = n
	}
	t.Logf("seed %d (%s=%d reruns these sequences)", master, envSeed, master)
	return master
}

// runSequence runs one sequence from its seed.
func runSequence(t *testing.T, seed uint64, v *verifier) *sequence {
	r := rand.New(rand.NewPCG(seed, 0x5e9))
	s := &sequence{t: t, seed: seed, r: r, verify: v, notes: map[string]int{},
		m: &model{owners: map[string][]string{}, ownerOf: map[string]string{}, extOf: map[string]string{}}}
	s.env = newEnv(t, r.IntN(versitygwShare) == 0)
	defer s.env.proxy.srv.Close()

	cfg := randomSettings(r)
	first := runSpec{name: "run1", cfg: cfg, input: randomInput(r, 1+r.IntN(4)), what: "first"}
	s.execute(first, false)
	steps := 1 + r.IntN(3)
	prev := first
	for i := range steps {
		next := runSpec{name: fmt.Sprintf("run%d", i+2), cfg: prev.cfg, input: prev.input}
		damage := ""
		if s.m.last != nil && r.IntN(100) < 45 {
			damage = s.damage()
		}
		switch {
		case strings.HasPrefix(damage, "marker") && r.IntN(10) < 7, damage == "legacy" && r.IntN(10) < 8, r.IntN(10) < 3:
			var only []string
			if damage == "legacy" {
				only = []string{"Compression", "Format", "Shards", "MaxFileRecords"}
			}
			n := 1 + r.IntN(2)
			var names []string
			next.cfg, names = changeSettings(r, prev.cfg, n, only)
			next.what = "settings " + strings.Join(names, "+")
		default:
			kind := pick(r, inputChanges)
			full := int64(0)
			if s.seed&fullFilesBias != 0 {
				full = prev.cfg.fullFiles()
			}
			if full > 0 && r.IntN(3) == 0 {
				// Records after every file of a partition of full files
				// keep each old file and add new ones: only the partition's
				// manifest tells that the complete partition would grow.
				kind = "superset-after"
			}
			next.input = changeInput(r, prev.input, kind, full)
			next.what = "input " + kind
		}
		if damage != "" {
			s.lastDamage = damage
		}
		crash := damage == "" && r.IntN(100) < 30
		s.execute(next, crash)
		if s.m.last != nil && s.m.last.name == next.name {
			prev = next
		}
	}
	return s
}

// execute runs r (first ending it after a random number of S3 calls when
// crash is set, then again in full) and checks the folder after each.
func (s *sequence) execute(r runSpec, crash bool) {
	want := s.m.expect(r)
	if crash && want == accept {
		limit := int64(1 + s.r.IntN(120))
		s.env.proxy.arm(limit)
		before := s.snapshot()
		err := s.run(r)
		refused, calls := s.env.proxy.refused.Load(), s.env.proxy.refusedCalls()
		s.env.proxy.arm(-1)
		s.step("%s [%s, %s, %d records] ended after %d S3 calls (%v)", r.name, r.what, r.cfg, len(r.input), limit, short(err))
		if refused == 0 {
			// It finished before the limit: a whole run.
			s.check(r, want, before, err)
		} else {
			if err == nil && !cleanUpOnly(calls) {
				s.fail("crashed-run-succeeded", "%s succeeded although its S3 calls after the %d-th were refused: %s", r.name, limit, strings.Join(calls, ", "))
			}
			s.m.own(r)
			s.compare("after the crash of " + r.name)
			r.name += "-rerun"
			r.what = "rerun after crash"
		}
		if refused == 0 {
			return
		}
	}
	before := s.snapshot()
	err := s.run(r)
	s.step("%s [%s, %s, %d records]: want %s, got %s", r.name, r.what, r.cfg, len(r.input), want, short(err))
	s.check(r, want, before, err)
}

// finalizes reports whether r commits files at bundle finalization,
// before any barrier: a run of a damaged folder may then fail after
// committing some (docs/guarantees.md), which verify must name.
func finalizes(r runSpec) bool { return r.cfg.FinalizeCommit == "always" && !raceEnabled }

// cleanUpOnly reports whether every refused call (method and request
// URI) is one of the clean-up after the run's commits, which never fails
// a run (docs/operating.md): listing uploads, aborting one, deleting
// objects. Such a run may succeed; the uploads it leaves are judged after
// the rerun.
func cleanUpOnly(calls []string) bool {
	for _, c := range calls {
		method, uri, _ := strings.Cut(c, " ")
		_, query, _ := strings.Cut(uri, "?")
		v, _ := url.ParseQuery(query)
		switch {
		case method == http.MethodGet && v.Has("uploads"):
		case method == http.MethodDelete:
		case method == http.MethodPost && v.Has("delete"):
		default:
			return false
		}
	}
	return true
}

// check judges a whole run's outcome against the model's.
func (s *sequence) check(r runSpec, want outcome, before *folderoracle.Snapshot, err error) {
	after := s.snapshot()
	diff := folderoracle.Committed(before, after)
	switch {
	case err != nil && want == accept:
		s.fail("accepted-run-failed", "%s (%s) should have succeeded: %v", r.name, r.what, firstLine(err))
	case err == nil && (want == refuse || want == refuseWeak):
		s.fail("changed-run-accepted", "%s (%s) should have been refused; it succeeded, committing %d changes: %s", r.name, r.what, len(diff), clip(diff))
	case err != nil && len(diff) > 0 && want != refuseWeak && !(want == either && finalizes(r)):
		s.fail("refused-run-committed", "%s (%s) failed (%s) but changed the folder: %s", r.name, r.what, firstLine(err), clip(diff))
	}
	if err != nil && (want == refuseWeak || want == either && finalizes(r)) && len(diff) > 0 {
		s.m.damaged = "a partition mixed by FinalizeCommit always"
	}
	if err == nil {
		identical := s.m.last != nil && s.m.damaged == "" && r.cfg.bytesKey() == s.m.last.cfg.bytesKey() && sameMultiset(r.input, s.m.last.input)
		if identical && len(diff) > 0 {
			s.fail("identical-rerun-changed", "%s, an identical rerun, changed the folder: %s", r.name, clip(diff))
		}
		s.m.own(r)
		if s.m.legacy {
			s.m.legacy = false
			s.m.marker = nil
		}
		if s.m.marker == nil {
			if o, ok := after.Objects[folderoracle.SettingsMarker]; ok {
				s.m.marker = o.Body
			}
		}
		last := r
		s.m.last = &last
		// The run answers for the partitions it wrote and, when it wrote
		// any, for the settings marker it relied on; damage elsewhere is
		// verify's to name.
		verdict := folderoracle.Judge(after, s.m.expectation())
		mine := byDest(r.input)
		for _, p := range verdict.Problems {
			dest, _, _ := strings.Cut(p.Partition, "@")
			switch {
			case strings.HasPrefix(p.Text, "open upload"), p.Text == "no output in the folder":
				continue
			case p.Partition == "" && len(r.input) == 0:
				continue
			case p.Partition != "" && mine[dest] == nil:
				continue
			case p.Unseen:
				// Nothing in the folder shows it (a v1 folder's marker
				// deleted is an earlier release's folder to the sink).
				s.notes["unseen without a manifest"]++
				continue
			case p.Partition != "" && want == either && r.cfg.FinalizeCommit == "always":
				// Without the run-wide barrier the sink judges a
				// partition by its manifest alone, so damage to a
				// partition it did not cause (a file copied beside
				// the ones its manifest lists) is verify's to name
				// (compare fails the sequence where verify exits 0).
				s.notes["damage left for verify without a barrier"]++
				continue
			}
			s.fail("wrong-after-success", "after %s succeeded: %s", r.name, p)
		}
		for _, d := range diff {
			rel, _, _ := strings.Cut(d[strings.IndexByte(d, ' ')+1:], " (")
			if f, ok := folderoracle.ParseFile(rel); ok && mine[f.Destination] == nil {
				s.fail("untouched-partition-changed", "%s succeeded and changed %s, a partition it has no records for", r.name, d)
			}
		}
		if !verdict.Wrong() {
			s.m.damaged = ""
		}
		for _, u := range after.Uploads {
			if _, ok := after.Objects[u]; !ok {
				continue
			}
			if r.cfg.OutputVersion < 2 {
				// Output version 1 has no manifest stage to remove them:
				// the sweep does, at any age (docs/operating.md).
				s.notes["uploads at committed keys left for the sweep (output version 1)"]++
				continue
			}
			s.fail("upload-left", "after %s succeeded, an upload of the committed key %s is open", r.name, u)
		}
	}
	s.compare("after " + r.name)
}

// compare runs s3once verify on the folder and checks it against the
// oracle's verdict.
func (s *sequence) compare(when string) {
	snap := s.snapshot()
	verdict := folderoracle.Judge(snap, s.m.expectation())
	sameSize := s.m.damaged == "file-same-size" && !hasManifest(snap)
	checkVerify(s.t, s.verify, s.env, s.seed, when, verdict, sameSize, s.notes, s.fail)
}

// checkVerify runs s3once verify on env's folder, by default and with
// --read where the binary has it, and checks its exit codes against the
// oracle's verdict: exit 0 where the oracle finds the folder wrong or
// unfinished is a failure (reported through fail), and --read must exit 0
// exactly where the folder is right and complete. sameSize says the
// folder, without manifests, holds a file changed into other bytes of its
// size, which no reader can tell. What verify does that the oracle does
// not require is counted in notes.
func checkVerify(t *testing.T, v *verifier, e *env, seed uint64, when string, verdict folderoracle.Verdict, sameSize bool, notes map[string]int, fail func(kind, format string, args ...any)) {
	code, out := v.run(e, false)
	right := verdict.Right()
	// verify proves, by default, every file's bytes against its manifest
	// but not the manifest's record counts (it reports them unchecked),
	// and no reader can see a batch's last files gone from a partition
	// without a manifest.
	switch {
	case code == 0 && !verdict.RightBut(true):
		fail("verify-ok-on-wrong", "%s: verify exited 0; the oracle says %s", when, verdict)
	case code != 0 && code != 1 && code != 3:
		fail("verify-exit", "%s: verify exited %d: %s", when, code, clipText(out))
	case code != 0 && right:
		notes[fmt.Sprintf("exit %d", code)]++
		t.Logf("seed %d %s: verify exited %d on a folder the oracle finds right: %s", seed, when, code, clipText(out))
	}
	if v.hasRead {
		rc, rout := v.run(e, true)
		switch {
		case rc == 0 && !right && sameSize:
			// Bytes of a file's size that still decode (a letter's case
			// flipped in a text file), in a folder without manifests: no
			// checksum records what the file held.
			notes["same-size change without a manifest"]++
			t.Logf("seed %d %s: verify --read exited 0 on a same-size change in a folder without manifests: %s", seed, when, verdict)
		case rc == 0 && !right && verdict.RightBut(false):
			notes["unseen by any reader"]++
			t.Logf("seed %d %s: verify --read exited 0 where only the oracle's model shows what is missing (a partition without a manifest lacking its last files, or a window's completion marker not yet written): %s", seed, when, verdict)
		case (rc == 0) != right:
			fail("verify-read-disagrees", "%s: verify --read exited %d; the oracle says %s: %s", when, rc, verdict, clipText(rout))
		}
	}
}

// run runs one pipeline.
func (s *sequence) run(r runSpec) error {
	s.runs++
	p, sc := beam.NewPipelineWithRoot()
	return runWrite(p, sc, beam.CreateList(sc, r.input), s.env.sinkConfig(r.cfg), &runTime)
}

// sinkConfig is the sink's Config for settings c, writing to e's folder
// through its proxy.
func (e *env) sinkConfig(c settings) sink.Config {
	return sink.Config{
		Bucket: e.bucket, Prefix: prefix, Connection: sink.Connection{Endpoint: e.proxy.srv.URL, Region: "us-east-1", PathStyle: true,
			Credentials: sink.Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: s3test.SecretKeyEnv}}, Files: sink.Files{Destination: firstLetter,
			Format:          c.Format,
			Compression:     c.Compression,
			Shards:          c.Shards,
			MaxFileRecords:  c.MaxFileRecords,
			MaxFileBytes:    c.MaxFileBytes,
			TargetFileBytes: c.TargetFileBytes,
			OutputVersion:   c.OutputVersion}, Tuning: sink.Tuning{FinalizeCommit: c.FinalizeCommit},
	}
}

// runWrite adds the sink over col to p and runs p on prism, adding its
// time to d.
func runWrite(p *beam.Pipeline, sc beam.Scope, col beam.PCollection, cfg sink.Config, d *durations) error {
	if _, err := sink.TryWrite(sc, col, cfg); err != nil {
		return fmt.Errorf("building the pipeline: %w", err)
	}
	start := time.Now()
	_, err := beam.Run(context.Background(), "prism", p)
	d.add(time.Since(start))
	return err
}

func (s *sequence) snapshot() *folderoracle.Snapshot { return s.env.snapshot(s.t, s.seed) }

// snapshot reads e's folder.
func (e *env) snapshot(t *testing.T, seed uint64) *folderoracle.Snapshot {
	snap, err := folderoracle.Read(context.Background(), e.client, e.bucket, prefix)
	if err != nil {
		t.Fatalf("seed %d: read the folder: %v", seed, err)
	}
	return snap
}

// damage edits the folder as a person or a tool might, and says how.
func (s *sequence) damage() string {
	snap := s.snapshot()
	r := s.r
	var files, manifests []string
	for _, k := range slices.Sorted(maps.Keys(snap.Objects)) {
		if _, ok := folderoracle.ParseFile(k); ok {
			files = append(files, k)
		} else if _, _, ok := folderoracle.ParseManifest(k); ok {
			manifests = append(manifests, k)
		}
	}
	marker, hasMarker := snap.Objects[folderoracle.SettingsMarker]
	kinds := slices.Clone(damages)
	if s.m.cfg != nil && s.m.cfg.OutputVersion == 1 && hasMarker {
		kinds = append(kinds, slices.Repeat([]string{"legacy"}, len(damages))...)
	}
	for range 20 {
		kind := pick(r, kinds)
		switch {
		case strings.HasPrefix(kind, "marker") && !hasMarker,
			strings.HasPrefix(kind, "manifest") && len(manifests) == 0,
			strings.HasPrefix(kind, "file") && len(files) == 0,
			kind == "marker-truncate" && strings.Count(string(marker.Body), "\n") < 2:
			continue
		}
		if kind == "marker-delete" && s.m.cfg != nil && s.m.cfg.OutputVersion == 1 {
			// A version-1 folder without its marker is, byte for byte,
			// an earlier release's folder: no reader can tell the two
			// apart, so the model takes it as one.
			kind = "legacy"
		}
		var what string
		switch kind {
		case "legacy":
			s.del(folderoracle.SettingsMarker)
			s.m.legacy, s.m.marker = true, nil
			s.step("damage: the marker of a version-1 folder removed, as an earlier release left none")
			s.compare("after legacy")
			return kind
		case "marker-truncate":
			lines := strings.SplitAfter(string(marker.Body), "\n")
			k := 1 + r.IntN(len(lines)-2)
			s.put(folderoracle.SettingsMarker, []byte(strings.Join(lines[:k], "")))
			what = fmt.Sprintf("settings marker cut to its first %d of %d lines", k, len(lines)-1)
		case "marker-delete":
			s.del(folderoracle.SettingsMarker)
			what = "settings marker deleted"
		case "marker-edit":
			b := bytes.Replace(marker.Body, []byte("shards="), []byte("shards=1"), 1)
			s.put(folderoracle.SettingsMarker, b)
			what = "settings marker's shards edited"
		case "manifest-truncate", "manifest-delete", "manifest-edit-records", "manifest-edit-size":
			key := pick(r, manifests)
			body := snap.Objects[key].Body
			switch kind {
			case "manifest-truncate":
				lines := strings.SplitAfter(string(body), "\n")
				if len(lines) < 3 {
					s.del(key)
					s.m.unclose(key)
					what = key + " (one line) deleted"
					break
				}
				k := r.IntN(len(lines) - 1)
				s.put(key, []byte(strings.Join(lines[:k], "")))
				what = fmt.Sprintf("%s cut to %d of %d lines", key, k, len(lines)-1)
			case "manifest-delete":
				s.del(key)
				s.m.unclose(key)
				what = key + " deleted"
			case "manifest-edit-records":
				s.put(key, []byte(strings.ReplaceAll(string(body), `"records":`, `"records":1000`)))
				what = key + "'s record counts multiplied by 1000 or more"
			default:
				s.put(key, []byte(strings.Replace(string(body), `"size":`, `"size":9`, 1)))
				what = key + "'s first size edited"
			}
		case "file-delete":
			key := pick(r, files)
			s.del(key)
			what = key + " deleted"
		case "file-copy-next":
			key := pick(r, files)
			f, _ := folderoracle.ParseFile(key)
			next := strings.Replace(key, fmt.Sprintf("-file-%05d", f.Index), fmt.Sprintf("-file-%05d", f.Index+1), 1)
			if _, taken := snap.Objects[next]; taken {
				continue
			}
			s.put(next, snap.Objects[key].Body)
			what = key + " copied to the next file index"
		case "file-same-size":
			key := pick(r, files)
			b := slices.Clone(snap.Objects[key].Body)
			b[r.IntN(len(b))] ^= 0x20
			s.put(key, b)
			what = key + " replaced with other bytes of the same size"
		}
		s.m.damaged = kind
		s.step("damage: %s", what)
		s.compare("after damage " + kind)
		return kind
	}
	return ""
}

func (s *sequence) put(rel string, body []byte) {
	_, err := s.env.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(s.env.bucket), Key: aws.String(prefix + "/" + rel), Body: bytes.NewReader(body)})
	if err != nil {
		s.t.Fatalf("seed %d: put %s: %v", s.seed, rel, err)
	}
}

func (s *sequence) del(rel string) {
	_, err := s.env.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(s.env.bucket), Key: aws.String(prefix + "/" + rel)})
	if err != nil {
		s.t.Fatalf("seed %d: delete %s: %v", s.seed, rel, err)
	}
}

// runTime sums the pipelines' wall time.
var runTime durations

type durations struct {
	mu    sync.Mutex
	n     int
	total time.Duration
}

func (d *durations) add(x time.Duration) { d.mu.Lock(); d.n++; d.total += x; d.mu.Unlock() }

func (d *durations) mean() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == 0 {
		return 0
	}
	return (d.total / time.Duration(d.n)).Round(time.Millisecond)
}

// ---- servers -------------------------------------------------------------------

var (
	gwOnce sync.Once
	gw     *s3test.Server
	gwErr  error
)

// newEnv gives a sequence a fresh bucket on the in-memory server, or on
// versitygw (started once for the test binary).
func newEnv(t *testing.T, versity bool) *env {
	if versity {
		gwOnce.Do(func() { gw, gwErr = s3test.Launch(s3test.Options{}) })
		if gwErr != nil {
			t.Fatalf("start versitygw: %v", gwErr)
		}
		name := gw.Bucket(t)
		return &env{proxy: newProxy(viaHTTP(gw.Endpoint())), client: s3test.NewClient(gw.Endpoint(), s3test.ClientOptions{MaxAttempts: 3}), server: "versitygw", bucket: name}
	}
	f := s3mem.New(s3mem.Options{})
	f.CreateBucket(bucket)
	sinkSide := f.NewClient(s3mem.ClientOptions{Name: "sink", MaxAttempts: 1})
	return &env{proxy: newProxy(viaClient(sinkSide, s3mem.Endpoint)), client: f.NewClient(s3mem.ClientOptions{Name: "oracle", MaxAttempts: 3}), server: "mem", bucket: bucket}
}

// ---- verify ----------------------------------------------------------------------

// verifier runs the s3once command, built once per test binary.
type verifier struct {
	bin     string
	hasRead bool
	calls   int
}

func newVerifier(t *testing.T) *verifier {
	dir := t.TempDir()
	bin := filepath.Join(dir, "s3once")
	args := []string{"build", "-o", bin}
	if mutant.Enabled {
		// verify's mutation points, switched by S3ONCE_MUTANT
		// (mutant_test.go).
		args = append(args, "-tags", "s3once_mutant")
	}
	cmd := exec.Command("go", append(args, "github.com/s3once/s3once/cmd/s3once")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build s3once: %v\n%s", err, out)
	}
	help, _ := exec.Command(bin, "verify", "-h").CombinedOutput()
	v := &verifier{bin: bin, hasRead: bytes.Contains(help, []byte("-read"))}
	t.Logf("s3once verify --read: supported=%v", v.hasRead)
	return v
}

// run runs s3once verify on the folder and returns its exit code and output.
func (v *verifier) run(e *env, read bool) (int, string) {
	v.calls++
	args := []string{"verify", "--bucket", e.bucket, "--prefix", prefix, "--endpoint", e.proxy.srv.URL, "--path-style", "--region", "us-east-1"}
	if read {
		args = append(args, "--read")
	}
	cmd := exec.Command(v.bin, args...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+s3test.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3test.SecretKey, "AWS_SESSION_TOKEN=")
	out, err := cmd.CombinedOutput()
	var xe *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &xe):
		return xe.ExitCode(), string(out)
	default:
		return -1, err.Error()
	}
}

// ---- text ----------------------------------------------------------------------------

func firstLine(err error) string {
	if err == nil {
		return "ok"
	}
	msg := err.Error()
	if i := strings.Index(msg, "[s3once:"); i >= 0 {
		msg = msg[i:]
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return msg
}

func short(err error) string {
	if err == nil {
		return "success"
	}
	return "failure: " + firstLine(err)
}

func clip(xs []string) string {
	if len(xs) > 6 {
		return strings.Join(xs[:6], "; ") + fmt.Sprintf("; and %d more", len(xs)-6)
	}
	return strings.Join(xs, "; ")
}

func clipText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		return s[:400] + "..."
	}
	return s
}
