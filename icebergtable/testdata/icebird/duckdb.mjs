// Reads Parquet files with DuckDB and prints what it finds as JSON lines.
//
//   node duckdb.mjs <file>...
//
// The first line describes the files: "columns" maps each column to the
// type DuckDB reads it as, and "parquet" lists each distinct column of the
// files' own schemas (name, physical type, logical type, repetition) as
// DuckDB decodes them from the footers. Every later line is one row of the
// files, read as one relation: ID and Name as they are, At as nanoseconds
// since the epoch (epoch_ns, which keeps every digit DuckDB read), Note as
// a string or null. 64-bit integers are printed as decimal strings.
//
// The files are read from the local disk with read_parquet, which DuckDB
// has built in. Extensions are neither installed nor loaded on demand, so
// nothing here reaches the network: a query that needed one would fail.
import { DuckDBInstance, listValue, LIST, VARCHAR } from '@duckdb/node-api'

const files = process.argv.slice(2)
if (files.length === 0) {
  console.error('usage: node duckdb.mjs <file>...')
  process.exit(2)
}

const instance = await DuckDBInstance.create(':memory:', {
  autoinstall_known_extensions: 'false',
  autoload_known_extensions: 'false',
})
const conn = await instance.connect()
const params = { files: listValue(files) }
const types = { files: LIST(VARCHAR) }
const query = async sql => (await conn.runAndReadAll(sql, params, types)).getRowObjectsJson()

const columns = {}
for (const c of await query('DESCRIBE SELECT * FROM read_parquet($files)')) columns[c.column_name] = c.column_type
const parquet = await query(
  'SELECT DISTINCT name, type, logical_type, repetition_type FROM parquet_schema($files) WHERE type IS NOT NULL ORDER BY name',
)
process.stdout.write(JSON.stringify({ columns, parquet }) + '\n')

const rows = await query('SELECT "ID", "Name", epoch_ns("At") AS "At", "Note" FROM read_parquet($files)')
for (const row of rows) process.stdout.write(JSON.stringify(row) + '\n')
conn.closeSync()
instance.closeSync()
