//go:build !iceberg

package main

import (
	"context"
	"errors"
)

// openIceberg is the table stage of -format iceberg, which this binary
// leaves out so that it links no Iceberg: `make run FORMAT=iceberg` builds
// it with -tags iceberg.
func openIceberg(context.Context, string, string, string, options) (tableStage, error) {
	return nil, errors.New("-format iceberg: this binary is built without the Iceberg table stage; run make run FORMAT=iceberg (go run -tags iceberg ./cmd/s3once-run -format iceberg)")
}
