//go:build !s3once_mutant

package mutant

// Enabled reports whether this build carries the switches (the
// s3once_mutant build tag). Without it every switch is off.
const Enabled = false

// On reports whether b is switched on: never, in a build without the tag.
func On(Bug) bool { return false }

// Set switches nothing on in a build without the tag: asking it for a bug
// there is a test built the wrong way, and it panics saying so.
func Set(b Bug) (restore func()) {
	if b != 0 {
		panic("mutant: " + b.String() + " needs a build with -tags s3once_mutant")
	}
	return func() {}
}
