package sink

// Canary digests: what the libraries that encode the files write, recorded
// in the settings marker by what they write rather than by their module
// versions. A digest is the SHA-256 of the library's output on a fixed
// canary input, encoded the way the writer encodes files: the codec's
// members on a canary corpus (filebody.Canary), a canary Parquet file
// through the sink's own Parquet path (parquetbody.Canary). A test binary
// (which carries no module versions) and a production binary of the same
// libraries record the same digests; two library versions that write other
// bytes record other digests, and a rerun with them is refused as changed
// settings before any commit. Module versions stay in the marker for an
// operator to read, never compared.

import (
	"sync"

	"github.com/s3once/s3once/format"
	"github.com/s3once/s3once/internal/filebody"
	"github.com/s3once/s3once/internal/parquetbody"
)

var canaries sync.Map // "codec:<name>" or "parquet:<compression>" -> digest

// codecCanary is the digest of what the codec registered under name writes
// for the canary corpus (filebody.Canary); an error, such as an unknown
// codec, is its digest.
func codecCanary(name string) string {
	return canary("codec:"+name, func() (string, error) {
		c, err := format.LookupCodec(name)
		if err != nil {
			return "", err
		}
		return filebody.Canary(c)
	})
}

// parquetCanary is the digest of the canary Parquet file the sink's
// Parquet path writes with the page compression named
// (parquetbody.Canary).
func parquetCanary(compression string) string {
	return canary("parquet:"+compression, func() (string, error) { return parquetbody.Canary(compression) })
}

// canary returns the digest stored under key, made by run the first time.
func canary(key string, run func() (string, error)) string {
	if d, ok := canaries.Load(key); ok {
		return d.(string)
	}
	d, err := run()
	if err != nil {
		d = "error: " + err.Error()
	}
	canaries.Store(key, d)
	return d
}
