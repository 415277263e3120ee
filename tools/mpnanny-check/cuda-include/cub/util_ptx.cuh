// mpnanny stand-in (see host_defines.h at the top): all of CUB that is declared is in cub.cuh.
#pragma once
#include "cub.cuh"
