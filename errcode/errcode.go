// Package errcode gives each kind of failure s3once reports a stable code,
// written into the error's message as a token such as [s3once:key-taken],
// and one parser that finds it again.
//
// A pipeline's error reaches its driver through the runner, and on a
// portable runner (prism, Dataflow) only the message text survives that
// trip: errors.Is cannot see through it. The token is what a program
// branches on then. Inside one process errors.Is on the sentinels
// (committer.ErrKeyTaken, recoverable.ErrNoSuchUpload, sink.ErrInvalidConfig,
// ...) works as before; each sentinel's message ends in its token, so every
// error that wraps one carries the token too, through any wrapping and any
// runner.
//
// The codes are part of s3once's interface: a code keeps its name and its
// meaning across releases, and new codes may be added. The token's form is
// "[s3once:" + name + "]", the name made of lowercase letters, digits and
// hyphens.
//
// Never match the free text of a message: it is written for people and
// changes. Use Of, Has or InMessage:
//
//	if errcode.Has(err, errcode.KeyTaken) { ... }
package errcode

import (
	"strings"
)

// Code names a kind of failure. Its value is the name in the token.
type Code string

// The codes, and the sentinels that carry them.
const (
	// committer
	Conflict                     Code = "conflict"                       // committer.ErrConflict
	RewriteRequired              Code = "rewrite-required"               // committer.ErrRewriteRequired
	KeyTaken                     Code = "key-taken"                      // committer.ErrKeyTaken
	DataLost                     Code = "data-lost"                      // committer.ErrDataLost
	Unconfirmed                  Code = "unconfirmed"                    // committer.ErrUnconfirmed
	ConditionalWritesUnsupported Code = "conditional-writes-unsupported" // committer.ErrConditionalWritesUnsupported

	// recoverable
	NoSuchUpload      Code = "no-such-upload"      // recoverable.ErrNoSuchUpload
	PartsChanged      Code = "parts-changed"       // recoverable.ErrPartsChanged
	SideObjectMissing Code = "side-object-missing" // recoverable.ErrSideObjectMissing
	TailCorrupt       Code = "tail-corrupt"        // recoverable.ErrTailCorrupt
	PartLimit         Code = "part-limit"          // recoverable.ErrPartLimit
	Closed            Code = "closed"              // recoverable.ErrClosed
	InvalidToken      Code = "invalid-token"       // recoverable.ErrInvalidToken
	InvalidOptions    Code = "invalid-options"     // recoverable.ErrInvalidOptions
	Throttled         Code = "throttled"           // recoverable.ErrThrottled

	// sink
	InvalidConfig    Code = "invalid-config"    // sink.ErrInvalidConfig
	FoldersOverlap   Code = "folders-overlap"   // sink.ErrFoldersOverlap
	SettingsChanged  Code = "settings-changed"  // sink.ErrSettingsChanged
	PartitionChanged Code = "partition-changed" // sink.ErrPartitionChanged
	ManifestDamaged  Code = "manifest-damaged"  // sink.ErrManifestDamaged
	SettingsDamaged  Code = "settings-damaged"  // sink.ErrSettingsDamaged
	WindowComplete   Code = "window-complete"   // sink.ErrWindowComplete
	// Preflight: sink.ErrPreflight, which every error of sink.Preflight
	// wraps (nothing was written); program.Exit ends with status 3 on it.
	Preflight Code = "preflight"
	// CredentialsMissing: sink.ErrCredentialsMissing.
	CredentialsMissing Code = "credentials-missing"
)

const (
	tokenStart = "[s3once:"
	tokenEnd   = "]"
)

// Token is the text that marks a message with c: "[s3once:" + c + "]".
func (c Code) Token() string { return tokenStart + string(c) + tokenEnd }

func (c Code) String() string { return string(c) }

// New returns a sentinel error whose message is text followed by c's token.
// Its Code method returns c.
func New(c Code, text string) error {
	return &codedError{code: c, msg: text + " " + c.Token()}
}

type codedError struct {
	code Code
	msg  string
}

func (e *codedError) Error() string { return e.msg }

// Code returns the error's code.
func (e *codedError) Code() Code { return e.code }

// Of returns the first code whose token is in err's message. It finds
// nothing in a nil error.
func Of(err error) (Code, bool) {
	if err == nil {
		return "", false
	}
	return InMessage(err.Error())
}

// Has reports whether err's message carries c's token anywhere: a runner's
// report may hold several errors, and a sentinel may wrap another.
func Has(err error, c Code) bool {
	if err == nil {
		return false
	}
	for _, got := range All(err.Error()) {
		if got == c {
			return true
		}
	}
	return false
}

// InMessage returns the first code whose token is in msg, a message that
// may have lost its error value (a runner's report, a log line).
func InMessage(msg string) (Code, bool) {
	cs := parse(msg, 1)
	if len(cs) == 0 {
		return "", false
	}
	return cs[0], true
}

// All returns every code whose token is in msg, in the order they appear,
// repeats included.
func All(msg string) []Code { return parse(msg, -1) }

// parse is the one parser of tokens: it returns up to max codes (all when
// max < 0) of well-formed tokens in msg. A token's name is non-empty and
// made of lowercase letters, digits and hyphens; anything else that starts
// like a token is skipped.
func parse(msg string, max int) []Code {
	var out []Code
	for max < 0 || len(out) < max {
		i := strings.Index(msg, tokenStart)
		if i < 0 {
			break
		}
		msg = msg[i+len(tokenStart):]
		n := 0
		for n < len(msg) && validNameByte(msg[n]) {
			n++
		}
		if n > 0 && strings.HasPrefix(msg[n:], tokenEnd) {
			out = append(out, Code(msg[:n]))
			msg = msg[n+len(tokenEnd):]
		}
	}
	return out
}

func validNameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-'
}
