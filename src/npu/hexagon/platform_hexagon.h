/* The device runtime's services on a Hexagon DSP running Linux programs (qemu-hexagon here): buffers
 * mapped with mmap2(MAP_SHARED) of their fd, CLOCK_MONOTONIC, a 1 ms nanosleep as idle, one thread
 * (parallel runs every part on the caller), an anonymous block as the scratchpad (VTCM), a copy into
 * it as the DMA, and HVX as isa. No cycle counter, event counters or thread index. */
#ifndef TESSEL_NPU_HEXAGON_PLATFORM_H
#define TESSEL_NPU_HEXAGON_PLATFORM_H

#include "npu/device/device.h"

/* Fills *out with the services above and maps a scratchpad of vtcm_bytes (0: none). Returns
 * TSL_NPU_OK, or TSL_NPU_ERR_NO_MEMORY when the scratchpad cannot be had. */
int32_t tsl_npu_hexagon_platform_create(uint64_t vtcm_bytes, tsl_npu_platform* out);

#endif /* TESSEL_NPU_HEXAGON_PLATFORM_H */
