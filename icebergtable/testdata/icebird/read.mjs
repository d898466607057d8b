// Reads an Iceberg table with icebird and prints its rows as JSON lines.
//
//   node read.mjs <table location s3://bucket/path> <metadata file name> <server root>
//
// icebird fetches s3://bucket/key as https://bucket.s3.amazonaws.com/key.
// This machine reaches no such host: fetch is replaced by one that reads
// the object from the local test server's data folder, where versitygw
// keeps bucket/key at <root>/bucket/key, with Range and HEAD as S3 answers
// them. Nothing else is changed: the metadata, manifest lists, manifests and
// data files are icebird's and hyparquet's to read.
import { open, stat } from 'node:fs/promises'
import path from 'node:path'
import { icebergRead } from 'icebird'

const [tableUrl, metadataFileName, root] = process.argv.slice(2)
if (!tableUrl || !metadataFileName || !root) {
  console.error('usage: node read.mjs <table location> <metadata file name> <server root>')
  process.exit(2)
}

const s3Host = /^https:\/\/([^/]+)\.s3\.amazonaws\.com\/(.+)$/

globalThis.fetch = async (input, init = {}) => {
  const url = typeof input === 'string' ? input : input.url
  const m = s3Host.exec(url)
  if (!m) throw new Error(`unexpected fetch of ${url}`)
  const file = path.join(root, m[1], decodeURIComponent(m[2]))
  if (process.env.READER_TRACE) console.error('fetch', file, init.headers ?? '')
  let size
  try {
    size = (await stat(file)).size
  } catch {
    return new Response(null, { status: 404 })
  }
  const method = (init.method ?? 'GET').toUpperCase()
  if (method === 'HEAD') {
    return new Response(null, { status: 200, headers: { 'content-length': String(size) } })
  }
  const headers = new Headers(init.headers ?? {})
  const range = headers.get('range')
  let start = 0, end = size - 1, status = 200
  if (range) {
    const r = /^bytes=(\d*)-(\d*)$/.exec(range)
    if (!r) throw new Error(`unexpected range ${range}`)
    if (r[1] === '') {
      start = Math.max(0, size - Number(r[2]))
    } else {
      start = Number(r[1])
      if (r[2] !== '') end = Math.min(end, Number(r[2]))
    }
    status = 206
  }
  const fh = await open(file, 'r')
  try {
    const buf = Buffer.alloc(end - start + 1)
    await fh.read(buf, 0, buf.length, start)
    return new Response(buf, { status, headers: { 'content-length': String(buf.length) } })
  } finally {
    await fh.close()
  }
}

const rows = await icebergRead({ tableUrl, metadataFileName })
const plain = (k, v) => (typeof v === 'bigint' ? v.toString() : v instanceof Date ? v.toISOString() : v)
for (const row of rows) process.stdout.write(JSON.stringify(row, plain) + '\n')
