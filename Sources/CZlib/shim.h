#ifndef CZLIB_SHIM_H
#define CZLIB_SHIM_H

#include <zlib.h>

/// inflateInit2 and deflateInit2 are macros that pass ZLIB_VERSION and the stream's size: Swift cannot call them.
static inline int czlib_inflate_init_gzip(z_stream *stream) {
    /* 15 + 16: a window of 2^15 bytes, gzip only (header and CRC-32 trailer checked). */
    return inflateInit2(stream, 15 + 16);
}

static inline int czlib_deflate_init_gzip(z_stream *stream, int level) {
    /* 15 + 16: a window of 2^15 bytes, written with a gzip header and trailer. */
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

#endif
