#ifndef EDGEVISION_CZLIB_SHIM_H
#define EDGEVISION_CZLIB_SHIM_H
#include <zlib.h>

/// inflateInit2 is a macro in zlib.h; Swift cannot import it.
static inline int edgevision_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
#endif
