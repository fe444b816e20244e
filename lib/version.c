/* SPDX-License-Identifier: MIT */
#include "export.h"
#include "fsnwatch.h"

/* The header the library was built with: its version is the library's. */
FSNW_EXPORT const char *fsnw_version(void)
{
	return FSNW_VERSION_STRING;
}
