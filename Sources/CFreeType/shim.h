#ifndef EDGEVISION_CFREETYPE_SHIM_H
#define EDGEVISION_CFREETYPE_SHIM_H
#include <ft2build.h>
#include FT_FREETYPE_H

/// FT_LOAD_RENDER is a macro with a cast Swift may not import; exposed as a function.
static inline FT_Int32 edgevision_ft_load_render(void) { return FT_LOAD_RENDER; }
#endif
