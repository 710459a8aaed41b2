/* llc-22 -filetype=obj: the second function's literal pool is emitted at
 * the end of the first function's section, after its 2-byte retw.n, so
 * l32r's target is unaligned ("fixup value must be 4-byte aligned"). */
unsigned first(unsigned x) { return x != 0; }
unsigned second(unsigned x) { return x * 0x12345678u + 0x9abcdef0u; }
