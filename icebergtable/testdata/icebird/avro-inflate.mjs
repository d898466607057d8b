// What icebird's Avro reader imports in place of hyparquet-compressors (see
// hooks.mjs): the same exports, with a gunzip that inflates a raw deflate
// stream (Avro's "deflate" codec, which iceberg-go writes its manifest
// lists and manifests with) by Node's zlib. hyparquet-compressors' gunzip
// (1.1.1 and 1.1.2) reads such a stream and then, when its output buffer has
// room left, looks for another gzip member past the stream's end and
// decodes garbage: a RangeError, or wrong bytes. gzip members go to the
// original as before.
import { inflateRawSync } from 'node:zlib'
import * as original from 'hyparquet-compressors'

export * from 'hyparquet-compressors'

export function gunzip(input, output, inputIndex = 0, outputIndex = 0) {
  if (input[inputIndex] === 0x1f && input[inputIndex + 1] === 0x8b) {
    return original.gunzip(input, output, inputIndex, outputIndex)
  }
  return new Uint8Array(inflateRawSync(input.subarray(inputIndex)))
}
