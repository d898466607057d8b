package icebergtable

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
)

// errMaintenanceOnly is Commit's error on a Table that OpenForMaintenance
// opened.
var errMaintenanceOnly = errors.New("the table was opened for maintenance (OpenForMaintenance), without a record type: open it with Open to commit")

// OpenForMaintenance loads an existing table for Compact,
// ExpireSnapshots and RemoveOrphans. A maintenance job (a cron job, the s3once-table command)
// knows the table by its name, not by a program's record type, so no
// schema is checked; a Table opened so refuses Commit. ctx carries the S3
// settings of the table's file IO (WithS3), as for Open. A missing table
// is an error (catalog.ErrNoSuchTable): maintenance creates nothing.
func OpenForMaintenance(ctx context.Context, cat catalog.Catalog, ident table.Identifier) (*Table, error) {
	name := strings.Join(ident, ".")
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("s3once iceberg: open the table %s for maintenance: %w", name, err)
	}
	t := &Table{cat: cat, ident: ident, location: tbl.Location(), aws: utils.GetAwsConfig(ctx), loaded: tbl}
	if t.bucket, t.path, err = splitS3(tbl.Location()); err != nil {
		return nil, fmt.Errorf("s3once iceberg: the table %s: %w", name, err)
	}
	return t, nil
}
