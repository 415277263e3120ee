// mpnanny stand-in (see ../host_defines.h): all of CUB that is declared is in cub.cuh.
#pragma once
#include "../cub.cuh"
