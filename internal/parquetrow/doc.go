// Package parquetrow encodes the records of the sink's Parquet format: the
// bytes a record is from the moment it is encoded until the writer hands it
// to the Parquet library. The shard hash, the sort and MaxFileBytes work on
// these bytes, as on any other format's records.
//
// A Codec, compiled once per struct type by New, turns a value into its row
// and back. A row has exactly one encoding per value (Decode refuses every
// other byte string), loses nothing a Parquet column holds, and sorts
// bytewise the way its values compare, first field first.
//
// A row is the struct's fields in declaration order, without names or
// lengths, chosen by parquet-go's rules (Fields): unexported fields and
// fields tagged `parquet:"-"` are left out, and an embedded struct's fields
// count as the outer struct's. Each value is:
//
//	bool                 one byte, 0 or 1
//	intN, int            N/8 bytes (int: 8), big-endian, sign bit flipped
//	uintN, uint, uintptr N/8 bytes (uint, uintptr: 8), big-endian
//	float32, float64     the IEEE 754 bits, big-endian; a negative number has
//	                     every bit flipped, any other its sign bit (NaN
//	                     payloads are kept)
//	string               its bytes with each 0x00 as 0x00 0xFF, then 0x00 0x01
//	[]byte               0x00 for nil; else 0x01 and the bytes as a string
//	[N]byte              the N bytes
//	time.Time            UnixNano as an int64; a time outside the years
//	                     1678 to 2261 (what a nanosecond timestamp holds) is
//	                     refused
//	*T                   0x00 for nil; else 0x01 and the T
//	[]T                  0x00 for nil; else 0x01, then 0x01 and the T for each
//	                     element, then 0x00
//	struct               its fields
//
// A time decodes in UTC: its zone and monotonic reading are not data.
package parquetrow
