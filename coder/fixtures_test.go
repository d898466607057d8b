package coder

import (
	"encoding/hex"
	"strings"

	"github.com/s3once/s3once/recoverable"
)

// The tokens behind the golden files in testdata/. They are literals, not
// computed: a change in how the recoverable package chains parts must not change
// what an old token decodes to. Their values are shaped like what a stream
// makes: digests and CRCs were computed over generated part data when the files
// were first written.

const (
	fixtureBucket   = "s3once-out"
	fixtureKey      = "events/dt=2026-11-29/shard-00003-of-00016/part-00000.jsonl"
	fixtureUploadID = "2~hQ7xK3mZpV9dLr0sWb4TnYcE1fGuJiA.vT6oNq8yRk"
	fixturePrefix   = ".s3once/staging/"
)

// digest parses a 64-digit hex SHA-256.
func digest(s string) [32]byte {
	var d [32]byte
	if n, err := hex.Decode(d[:], []byte(s)); err != nil || n != len(d) {
		panic("bad digest literal " + s)
	}
	return d
}

type resumeCase struct {
	name  string // testdata/resume_v1_<name>.bin
	token recoverable.ResumeToken
}

type commitCase struct {
	name  string // testdata/commit_v1_<name>.bin
	token recoverable.CommitToken
}

func resumeCases() []resumeCase {
	return []resumeCase{
		{"side_object", recoverable.ResumeToken{
			Bucket:        fixtureBucket,
			Key:           fixtureKey,
			UploadID:      fixtureUploadID,
			PartSize:      8 << 20,
			StagingPrefix: fixturePrefix,
			Seq:           4,
			Parts: recoverable.PartList{
				Count:  2,
				Bytes:  16777216,
				Digest: digest("f166f6c05b4b6483cb0e9de5b6b670e6ed6632763f4e1507adf35c87b5276b87"),
				CRC:    0x028e2656301f6f97,
			},
			Tail: recoverable.Tail{
				Len:    3000000,
				CRC:    0x5075859c43397ea7,
				Object: ".s3once/staging/2%7EhQ7xK3mZpV9dLr0sWb4TnYcE1fGuJiA.vT6oNq8yRk/00000000000000000004",
			},
		}},
		{"inline", recoverable.ResumeToken{
			Bucket:        fixtureBucket,
			Key:           fixtureKey,
			UploadID:      fixtureUploadID,
			PartSize:      8 << 20,
			StagingPrefix: fixturePrefix,
			Seq:           2,
			Parts: recoverable.PartList{
				Count:  1,
				Bytes:  8388608,
				Digest: digest("1f4ca5c029dbfb9984fc31b739d202ba2b45b41c8ff5847fb754afaa5e6e76f3"),
				CRC:    0x6901d45252d60173,
			},
			Tail: recoverable.Tail{
				Len:    28,
				CRC:    0x52636d91638a89d2,
				Inline: []byte("tail bytes that ride inline\n"),
			},
		}},
		{"empty_tail", recoverable.ResumeToken{
			Bucket:        fixtureBucket,
			Key:           fixtureKey,
			UploadID:      fixtureUploadID,
			PartSize:      8 << 20,
			StagingPrefix: fixturePrefix,
			Seq:           3,
			Parts: recoverable.PartList{
				Count:  3,
				Bytes:  25165824,
				Digest: digest("42fe830eaf360dac0617e71fd7fc06d27a7d9e73906030441d3a52d0d18779dc"),
				CRC:    0x7fdb5bc8a7b575e8,
			},
		}},
		// A persist before the first part, with every optional field empty.
		{"zero_parts", recoverable.ResumeToken{
			Bucket:   "b0",
			Key:      "k",
			UploadID: "u",
			PartSize: 5 << 20,
			Seq:      1,
		}},
	}
}

func commitCases() []commitCase {
	return []commitCase{
		{"three_parts", recoverable.CommitToken{
			Bucket:        fixtureBucket,
			Key:           fixtureKey,
			UploadID:      fixtureUploadID,
			StagingPrefix: fixturePrefix,
			Parts: recoverable.PartList{
				Count:  3,
				Bytes:  18011783,
				Digest: digest("23bc8113a24d3aa969ce6836760d1036d8bbfa630cd78e4333f0c2b9bccfcd30"),
				CRC:    0x9c4cb34a86f9ef56,
			},
		}},
		{"zero_parts", recoverable.CommitToken{
			Bucket:   "b0",
			Key:      "k",
			UploadID: "u",
		}},
	}
}

// largestResume has every field at its bound: the largest token the format
// allows.
func largestResume() recoverable.ResumeToken {
	return recoverable.ResumeToken{
		Bucket:        strings.Repeat("b", MaxBucketLen),
		Key:           strings.Repeat("k", MaxKeyLen),
		UploadID:      strings.Repeat("u", MaxUploadIDLen),
		PartSize:      recoverable.MaxPartSize,
		StagingPrefix: strings.Repeat("p", MaxKeyLen),
		Seq:           ^uint64(0),
		Parts: recoverable.PartList{
			Count:  recoverable.MaxS3Parts,
			Bytes:  recoverable.MaxS3Parts * recoverable.MaxPartSize,
			Digest: digest(strings.Repeat("ff", 32)),
			CRC:    ^uint64(0),
		},
		Tail: recoverable.Tail{
			Len:    MaxInlineTail,
			CRC:    ^uint64(0),
			Inline: []byte(strings.Repeat("t", MaxInlineTail)),
		},
	}
}
