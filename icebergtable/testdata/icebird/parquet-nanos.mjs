// What icebird imports in place of hyparquet (see hooks.mjs): the same
// exports, with parquetReadObjects asking for nanosecond timestamps as
// their integer count (hyparquet's parsers option). By default hyparquet
// turns a TIMESTAMP(NANOS) value into a JavaScript Date, which keeps
// milliseconds: icebird would read every s3once timestamp (Iceberg's
// timestamptz_ns) cut to the millisecond.
import * as original from 'hyparquet'

export * from 'hyparquet'

export function parquetReadObjects(options) {
  return original.parquetReadObjects({
    ...options,
    parsers: { ...options.parsers, timestampFromNanoseconds: nanos => nanos },
  })
}
