// A module hook (node --import ./hooks.mjs): icebird's own imports of
// hyparquet-compressors and hyparquet get the wrappers that resolve.mjs
// names; see avro-inflate.mjs and parquet-nanos.mjs for why.
import { register } from 'node:module'

register('./resolve.mjs', import.meta.url)
