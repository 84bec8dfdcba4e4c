// Emulation shim for the tt-metal header of the same path: everything lives in tt_emu.h.
#pragma once
#include "../../tt_emu.h"
