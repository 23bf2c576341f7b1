/* Internal to the device runtime: a batch block checked and resolved against the device's
 * mappings (batch.c). */
#ifndef TESSEL_NPU_DEVICE_BATCH_H
#define TESSEL_NPU_DEVICE_BATCH_H

#include "npu/device/ops.h"

/* err_op of a batch refused as a whole (a count, buffer or tensor descriptor). */
#define TSL_NPU_BATCH_REFUSED 0xffffffffu

/* The arrays of a checked block and the device address of each of its buffers. */
typedef struct tsl_npu_batch {
    const tsl_npu_buf_desc* bufs;
    const tsl_npu_tensor_desc* tensors;
    const tsl_npu_op_desc* ops;
    tsl_npu_profile* profile;
    tsl_npu_span* spans; /* with TSL_NPU_BATCH_TRACE, else NULL */
    uint32_t n_bufs, n_tensors, n_ops;
    uint8_t* bases[TSL_NPU_MAX_BUFS];
} tsl_npu_batch;

/* Checks the block of `req` (req->block_size bytes at `block`) before anything runs:
 *  - counts: n_bufs <= TSL_NPU_MAX_BUFS, n_tensors <= TSL_NPU_MAX_TENSORS, block_size equal to
 *    tsl_npu_block_size(counts) (plus tsl_npu_trace_bytes with TSL_NPU_BATCH_TRACE), block 8-byte aligned -> TSL_NPU_ERR_BAD_BATCH;
 *  - buffers: fd mapped on the device (TSL_NPU_ERR_NO_MAPPING), size <= the mapping's (BAD_DESC);
 *  - tensors: buf < n_bufs, offset + size within the buffer (no u64 overflow), ne[i] >= 1 with at
 *    most 2^48 elements; for F32/F16/I32/I64 every element inside [offset, offset + size) and offset
 *    and strides multiples of the element size -> BAD_DESC;
 *  - ops: opcode known (UNKNOWN_OP), src/dst indices < n_tensors or TSL_NPU_NONE, the op's
 *    required src/dst present (BAD_DESC), then the op's own type/shape check, then its kparams
 *    header: flags 0 (BAD_DESC), scratch_bytes <= the device's VTCM (TSL_NPU_ERR_NO_VTCM).
 * Fills *b and returns TSL_NPU_OK, or a status with *err_op = the failing op's index, or
 * TSL_NPU_BATCH_REFUSED when no op is to blame. */
int32_t tsl_npu_batch_check(const tsl_npu_device* d, uint8_t* block, const tsl_npu_batch_req* req, tsl_npu_batch* b,
                            uint32_t* err_op);

/* Resolves op i of a checked batch on device d into *c (its kind's tensors as views of device
 * memory, d's platform and kernels). */
void tsl_npu_batch_resolve(const tsl_npu_batch* b, const tsl_npu_device* d, uint32_t i, tsl_npu_op_ctx* c);

#endif /* TESSEL_NPU_DEVICE_BATCH_H */
