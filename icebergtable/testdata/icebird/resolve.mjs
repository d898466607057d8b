// The resolve hook that hooks.mjs registers: within icebird's own source,
// hyparquet-compressors (its Avro reader's inflater) and hyparquet (its
// Parquet reader) resolve to the wrappers beside this file; every other
// import, the wrappers' own included, resolves as usual.
const wrappers = {
  'hyparquet-compressors': new URL('./avro-inflate.mjs', import.meta.url).href,
  hyparquet: new URL('./parquet-nanos.mjs', import.meta.url).href,
}

export async function resolve(specifier, context, next) {
  if (specifier in wrappers && context.parentURL?.includes('/node_modules/icebird/src/')) {
    return { url: wrappers[specifier], shortCircuit: true }
  }
  return next(specifier, context)
}
