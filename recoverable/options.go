package recoverable

import (
	"fmt"
	"strings"
	"time"

	"github.com/s3once/s3once/internal/s3call"
)

// S3's limits on multipart uploads.
const (
	MinPartSize = 5 << 20  // every part but the last must hold at least 5 MiB
	MaxPartSize = 5 << 30  // no part may exceed 5 GiB
	MaxS3Parts  = 10000    // part numbers run 1..10,000
	maxInline   = 64 << 10 // the largest tail that may ride in a token
)

// Defaults of Options' zero values.
const (
	DefaultPartSize      = 8 << 20
	DefaultConcurrency   = 4
	DefaultInlineTailMax = 4 << 10
	DefaultStagingPrefix = s3call.DefaultStagingPrefix
)

// Options configure a Writer. The zero value of each field means its default.
type Options struct {
	// PartSize is the size of every part before the last, in bytes: at least
	// 5 MiB, at most 5 GiB. Default 8 MiB. A file holds at most
	// PartSize x MaxParts bytes.
	PartSize int64
	// Concurrency is the number of parts a stream uploads at once. A stream
	// holds at most PartSize x (Concurrency + 1) bytes of buffers. Default 4.
	Concurrency int
	// MaxParts is the largest part number a stream will use, at most 10,000.
	// Default 10,000. A Write that would need another part returns
	// ErrPartLimit instead.
	MaxParts int
	// InlineTailMax is the largest tail (in bytes) that rides inside the resume
	// token instead of a side object. Default 4 KiB; a negative value never
	// inlines; at most 64 KiB.
	InlineTailMax int
	// StagingPrefix is where side objects go, in the file's bucket: a prefix
	// kept away from the output's readers and from its event notifications.
	// Default ".s3once/staging/".
	StagingPrefix string
	// CallTimeout bounds one attempt of one S3 call the stream makes; an
	// attempt that gets no answer in time (a stalled connection) is made again,
	// three times in all, then the call fails with ErrCallTimeout. Default: 30
	// seconds plus one second per MiB of PartSize.
	CallTimeout time.Duration
	// DisableChecksums turns off CRC64NVME on the wire, for servers that reject
	// the checksum headers. The stream still keeps and checks its own checksums.
	// The server then lists no part checksums, and parts are recognised by
	// their ETags alone: on a bucket whose ETags are not MD5s (SSE-KMS, SSE-C)
	// a part uploaded again with the same bytes fails Recover and commit with
	// ErrPartsChanged. Do not use it on such buckets (see the package docs).
	DisableChecksums bool
}

// Validate reports every problem of o, after its defaults, in one error
// wrapping ErrInvalidOptions: what NewWriter would refuse of it, for a
// caller that checks its configuration before it has a client.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

// withDefaults validates o and fills in defaults.
func (o Options) withDefaults() (Options, error) {
	var problems []string
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.PartSize < MinPartSize || o.PartSize > MaxPartSize {
		problems = append(problems, fmt.Sprintf("PartSize %d is outside S3's limits [%d, %d]", o.PartSize, MinPartSize, int64(MaxPartSize)))
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Concurrency < 1 || o.Concurrency > 256 {
		problems = append(problems, fmt.Sprintf("Concurrency %d must be in [1, 256]", o.Concurrency))
	}
	if o.MaxParts == 0 {
		o.MaxParts = MaxS3Parts
	}
	if o.MaxParts < 1 || o.MaxParts > MaxS3Parts {
		problems = append(problems, fmt.Sprintf("MaxParts %d must be in [1, %d]", o.MaxParts, MaxS3Parts))
	}
	if o.InlineTailMax == 0 {
		o.InlineTailMax = DefaultInlineTailMax
	}
	if o.InlineTailMax > maxInline {
		problems = append(problems, fmt.Sprintf("InlineTailMax %d exceeds %d (tokens live in checkpoints; keep them small)", o.InlineTailMax, maxInline))
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = s3call.CallTimeout(o.PartSize)
	}
	if o.CallTimeout < 0 {
		problems = append(problems, fmt.Sprintf("CallTimeout %v must be positive", o.CallTimeout))
	}
	o.StagingPrefix = s3call.StagingPrefix(o.StagingPrefix)
	if strings.HasPrefix(o.StagingPrefix, "/") {
		problems = append(problems, fmt.Sprintf("StagingPrefix %q must not start with '/'", o.StagingPrefix))
	}
	if len(problems) > 0 {
		return o, fmt.Errorf("%w: %s", ErrInvalidOptions, strings.Join(problems, "; "))
	}
	return o, nil
}
