package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/parquet-go/parquet-go"

	"github.com/s3once/s3once/internal/examples/harness"
	"github.com/s3once/s3once/pipelines/corpus"
	"github.com/s3once/s3once/sink"
)

// checkParquet reads back every committed Parquet file through S3 and checks
// that its footer holds the records the sink committed for it, and that the
// files together hold all the documents generated.
func checkParquet(ctx context.Context, w io.Writer, c *s3.Client, bucket string, rs []sink.FileResult, documents int64) error {
	if len(rs) == 0 {
		return errors.New("read back: no committed file was reported to this process")
	}
	var rows int64
	groups := 0
	for _, r := range rs {
		f, err := openParquet(ctx, c, bucket, r.Key)
		if err != nil {
			return err
		}
		if f.NumRows() != r.Records {
			return fmt.Errorf("read back s3://%s/%s: its footer holds %d rows, the sink committed %d records", bucket, r.Key, f.NumRows(), r.Records)
		}
		rows += f.NumRows()
		groups += len(f.RowGroups())
	}
	if rows != documents {
		return fmt.Errorf("read back: the files hold %d rows, %d documents were generated", rows, documents)
	}
	fmt.Fprintf(w, "read back with parquet-go: %d files, %d row groups, %s rows in their footers, each file's as committed, all %s documents\n",
		len(rs), groups, harness.Thousands(rows), harness.Thousands(documents))
	return nil
}

// openParquet reads the object at key and opens it as a Parquet file.
func openParquet(ctx context.Context, c *s3.Client, bucket, key string) (*parquet.File, error) {
	res, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("read back s3://%s/%s: %w", bucket, key, err)
	}
	data, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read back s3://%s/%s: %w", bucket, key, err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("read back s3://%s/%s: not a Parquet file: %w", bucket, key, err)
	}
	return f, nil
}

// showParquetFiles tells how to look at the Parquet files and shows the first
// record of one.
func showParquetFiles(w io.Writer, data, bucket string, rs []sink.FileResult) {
	if len(rs) == 0 {
		return
	}
	folder := filepath.Join(data, bucket, strings.SplitN(rs[0].Key, "/", 2)[0])
	fmt.Fprintf(w, "\nThe files are plain files under the server's data folder (folder = bucket, path = key):\n\n")
	fmt.Fprintf(w, "  find %s -name '*.parquet' | sort | head\n", folder)
	first := filepath.Join(data, bucket, filepath.FromSlash(rs[0].Key))
	if doc, err := firstDoc(first); err == nil {
		j, _ := json.Marshal(doc)
		line := string(j)
		if len(line) > 160 {
			line = line[:160] + "..."
		}
		fmt.Fprintf(w, "\nthe first record of %s:\n\n  %s\n", rs[0].Key, line)
	}
}

// firstDoc reads the first row of the Parquet file at path.
func firstDoc(path string) (corpus.Doc, error) {
	f, err := os.Open(path)
	if err != nil {
		return corpus.Doc{}, err
	}
	defer f.Close()
	r := parquet.NewGenericReader[corpus.Doc](f)
	defer r.Close()
	docs := make([]corpus.Doc, 1)
	if n, err := r.Read(docs); n != 1 {
		if err == nil {
			err = io.EOF
		}
		return corpus.Doc{}, err
	}
	return docs[0], nil
}
