/* Fault injection of the NPU device runtime, for tests only: the faults a test device injects
 * (tsl_npu_device.fault, set from TESSEL_NPU_FAULT by the link that starts the device) and the
 * hook that frees ops the STUCK fault holds. A production device runs with TSL_NPU_FAULT_NONE. */
#ifndef TESSEL_NPU_DEVICE_FAULTS_H
#define TESSEL_NPU_DEVICE_FAULTS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Faults a test device injects (TESSEL_NPU_FAULT, read by the link that starts the device). */
enum tsl_npu_fault {
    TSL_NPU_FAULT_NONE = 0,
    TSL_NPU_FAULT_STATUS = 1, /* answer every batch with TSL_NPU_ERR_INJECTED */
    TSL_NPU_FAULT_SEQ = 2,    /* answer with seq + 1000 */
    TSL_NPU_FAULT_HANG = 3,   /* never answer and stop the heartbeat (until cancelled) */
    TSL_NPU_FAULT_DIE = 4,    /* the device process exits in the middle of a batch (link's job) */
    TSL_NPU_FAULT_BAD_DESC = 5, /* host side: the session corrupts a tensor offset before sending */
    TSL_NPU_FAULT_STUCK = 6,    /* the first op of every batch never returns: its workers loop inside the
                                   op, blind to the cancel flag, without a heartbeat, until
                                   tsl_npu_device_release_stuck() (tests only; never, in a device process) */
    TSL_NPU_FAULT_SLOW = 7      /* every batch starts 20 idle naps (~20 ms) late, then runs normally: a
                                   device that lags behind its peers */
};

/* Lets every op the STUCK fault holds in this process finish (the op then answers
 * TSL_NPU_ERR_INJECTED); a STUCK op that starts later is held again. Only tests call it, to free
 * the threads of an in-process device the host abandoned. Safe from any thread. */
void tsl_npu_device_release_stuck(void);

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_NPU_DEVICE_FAULTS_H */
