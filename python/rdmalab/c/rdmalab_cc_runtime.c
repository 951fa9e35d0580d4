/* rdmalab_cc_runtime.c: rdmalab's side of the C controller interface,
 * compiled into every C controller's shared library beside its sources.
 *
 * Copyright 2026 the rdmalab authors. Licensed under the Apache License,
 * Version 2.0.
 *
 * It implements the DOCA PCC services a controller calls (parameters,
 * counters, the timer, printf) and the calls rdmalab makes into the library
 * (rdmalab_rt_*). Every call into the controller's code runs under a fault
 * guard: SIGSEGV, SIGBUS, SIGFPE and SIGILL raised inside it jump back here
 * and become an error that names the signal, instead of killing the run.
 * The guard costs a sigsetjmp without a signal mask (no system call) per
 * call. A fault outside a guarded call goes to the handler that was there
 * before. A library instance serves one run; rdmalab_rt_fini puts the
 * previous handlers back.
 */
#define _GNU_SOURCE
#include "rdmalab_cc.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RT_MAX_PARAMS DOCA_PCC_DEV_MAX_NUM_PARAMS_PER_ALGO
#define RT_MAX_COUNTERS DOCA_PCC_DEV_MAX_NUM_COUNTERS_PER_ALGO
#define RT_NAME 64

static uint32_t rt_params[RT_MAX_PARAMS];
static uint32_t rt_param_default[RT_MAX_PARAMS], rt_param_min[RT_MAX_PARAMS], rt_param_max[RT_MAX_PARAMS];
static char rt_param_name[RT_MAX_PARAMS][RT_NAME];
static uint32_t rt_param_count;
static uint32_t rt_counters[RT_MAX_COUNTERS];
static uint64_t rt_now_ps;
static char rt_label[RT_NAME] = "c";
/* The first parameter registration refused in doca_pcc_dev_user_init. The
 * NIC's API only returns a failure, which controllers rarely check: the
 * parameter would then read 0 in every event. rdmalab refuses the
 * controller before the run with this text instead. */
static char rt_param_error[256];

/* ---- Services ---------------------------------------------------------- */
doca_pcc_dev_error_t doca_pcc_dev_algo_init_metadata(uint32_t algo_idx, const struct doca_pcc_dev_algo_meta_data *md,
                                                     uint32_t param_num, uint32_t counter_num) {
    (void)algo_idx;
    (void)md;
    if (param_num > RT_MAX_PARAMS || counter_num > RT_MAX_COUNTERS) {
        if (!rt_param_error[0])
            snprintf(rt_param_error, sizeof rt_param_error,
                     "doca_pcc_dev_algo_init_metadata declared %u parameters and %u counters "
                     "(allowed: at most %u and %u)", param_num, counter_num, RT_MAX_PARAMS, RT_MAX_COUNTERS);
        return DOCA_PCC_DEV_STATUS_FAIL;
    }
    if (param_num > rt_param_count) rt_param_count = param_num;
    return DOCA_PCC_DEV_STATUS_OK;
}

doca_pcc_dev_error_t doca_pcc_dev_algo_init_param(uint32_t algo_idx, uint32_t param_id, uint32_t default_value,
                                                  uint32_t max_value, uint32_t min_value, uint32_t permissions,
                                                  uint32_t param_desc_size, uint64_t param_desc_addr) {
    (void)algo_idx;
    (void)permissions;
    if (param_id >= RT_MAX_PARAMS || min_value > max_value || default_value < min_value ||
        default_value > max_value) {
        const char *desc = (const char *)(uintptr_t)param_desc_addr;
        int n = desc ? (int)strnlen(desc, param_desc_size ? param_desc_size : RT_NAME) : 0;
        if (!rt_param_error[0])
            snprintf(rt_param_error, sizeof rt_param_error,
                     "doca_pcc_dev_algo_init_param(param_id %u, `%.*s`, default %u, max %u, min %u) was refused "
                     "(allowed: param_id 0 to %u, min <= default <= max), so the parameter would read 0",
                     param_id, n, desc ? desc : "", default_value, max_value, min_value, RT_MAX_PARAMS - 1);
        return DOCA_PCC_DEV_STATUS_FAIL;
    }
    rt_params[param_id] = default_value;
    rt_param_default[param_id] = default_value;
    rt_param_min[param_id] = min_value;
    rt_param_max[param_id] = max_value;
    const char *desc = (const char *)(uintptr_t)param_desc_addr;
    size_t n = desc ? strnlen(desc, param_desc_size ? param_desc_size : RT_NAME) : 0;
    if (n >= RT_NAME) n = RT_NAME - 1;
    memcpy(rt_param_name[param_id], desc ? desc : "", n);
    rt_param_name[param_id][n] = 0;
    if (param_id + 1 > rt_param_count) rt_param_count = param_id + 1;
    return DOCA_PCC_DEV_STATUS_OK;
}

doca_pcc_dev_error_t doca_pcc_dev_algo_init_counter(uint32_t algo_idx, uint32_t counter_id, uint32_t max_value,
                                                    uint32_t permissions, uint32_t counter_desc_size,
                                                    uint64_t counter_desc_addr) {
    (void)algo_idx;
    (void)max_value;
    (void)permissions;
    (void)counter_desc_size;
    (void)counter_desc_addr;
    return counter_id < RT_MAX_COUNTERS ? DOCA_PCC_DEV_STATUS_OK : DOCA_PCC_DEV_STATUS_FAIL;
}

doca_pcc_dev_error_t doca_pcc_dev_init_algo_slot(uint32_t portid, uint32_t algo_slot, uint32_t algo_idx,
                                                 uint32_t algo_en) {
    (void)portid;
    (void)algo_slot;
    (void)algo_idx;
    (void)algo_en;
    return DOCA_PCC_DEV_STATUS_OK;
}

uint32_t *doca_pcc_dev_get_algo_params(uint32_t port_num, uint32_t algo_slot) {
    (void)port_num;
    (void)algo_slot;
    return rt_params;
}

uint32_t *doca_pcc_dev_get_counters(uint32_t port_num, uint32_t algo_slot) {
    (void)port_num;
    (void)algo_slot;
    return rt_counters;
}

uint32_t doca_pcc_dev_get_timer_lo(void) { return (uint32_t)(rt_now_ps / 1000000); }
uint64_t doca_pcc_dev_get_timer(void) { return rt_now_ps / 1000000; }

void doca_pcc_dev_printf(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    fprintf(stderr, "[%s] ", rt_label);
    vfprintf(stderr, format, ap);
    va_end(ap);
}

/* ---- The fault guard --------------------------------------------------- */
static const int rt_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define RT_NSIG (sizeof rt_signals / sizeof rt_signals[0])
static struct sigaction rt_prev[RT_NSIG];
static int rt_installed;
static __thread sigjmp_buf *rt_jump;
static char *rt_altstack;

static void rt_handler(int sig, siginfo_t *info, void *uctx) {
    sigjmp_buf *j = rt_jump;
    if (j) {
        rt_jump = NULL;
        siglongjmp(*j, sig);
    }
    /* Not raised by the controller: whoever handled it before does. */
    for (unsigned i = 0; i < RT_NSIG; i++) {
        if (rt_signals[i] != sig) continue;
        if (rt_prev[i].sa_flags & SA_SIGINFO) {
            if (rt_prev[i].sa_sigaction) {
                rt_prev[i].sa_sigaction(sig, info, uctx);
                return;
            }
        } else if (rt_prev[i].sa_handler != SIG_DFL && rt_prev[i].sa_handler != SIG_IGN) {
            rt_prev[i].sa_handler(sig);
            return;
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void rt_install(void) {
    if (rt_installed) return;
    /* An alternate stack, so a stack overflow in the controller is caught too. */
    stack_t ss;
    rt_altstack = malloc(SIGSTKSZ * 4);
    if (rt_altstack) {
        ss.ss_sp = rt_altstack;
        ss.ss_size = SIGSTKSZ * 4;
        ss.ss_flags = 0;
        sigaltstack(&ss, NULL);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = rt_handler;
    /* SA_NODEFER: the signal is not left blocked after the jump out. */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (unsigned i = 0; i < RT_NSIG; i++) sigaction(rt_signals[i], &sa, &rt_prev[i]);
    rt_installed = 1;
}

/* ---- Calls from rdmalab ------------------------------------------------ */
int rdmalab_rt_abi_version(void) { return RDMALAB_CC_ABI_VERSION; }

/* Install the guard and run doca_pcc_dev_user_init, which may add or clear
 * bits of the mask rdmalab passes in (RX starts disabled). Returns 0, or
 * the signal that stopped it. */
int rdmalab_rt_init(const char *label, uint32_t *disable_event_bitmask) {
    size_t n = strnlen(label, RT_NAME - 1);
    memcpy(rt_label, label, n);
    rt_label[n] = 0;
    rt_install();
    if (!doca_pcc_dev_user_init) return 0;
    sigjmp_buf jb;
    int sig = sigsetjmp(jb, 0);
    if (sig) return sig;
    rt_jump = &jb;
    doca_pcc_dev_user_init(disable_event_bitmask);
    rt_jump = NULL;
    return 0;
}

void rdmalab_rt_fini(void) {
    if (!rt_installed) return;
    for (unsigned i = 0; i < RT_NSIG; i++) sigaction(rt_signals[i], &rt_prev[i], NULL);
    rt_installed = 0;
}

uint32_t rdmalab_rt_param_count(void) { return rt_param_count; }

/* The first refused registration ("" if none); see rt_param_error. */
const char *rdmalab_rt_param_error(void) { return rt_param_error; }

/* Parameter i: its name, default and range; 0 if it was never registered. */
int rdmalab_rt_param_info(uint32_t i, const char **name, uint32_t *def, uint32_t *min, uint32_t *max) {
    if (i >= rt_param_count) return 0;
    *name = rt_param_name[i];
    *def = rt_param_default[i];
    *min = rt_param_min[i];
    *max = rt_param_max[i];
    return 1;
}

void rdmalab_rt_set_param(uint32_t i, uint32_t value) {
    if (i < RT_MAX_PARAMS) rt_params[i] = value;
}

/* One event through the controller, under the guard. Returns 0, or the
 * signal it raised. */
int rdmalab_rt_call(doca_pcc_dev_algo_ctxt_t *ctxt, doca_pcc_dev_event_t *event, const doca_pcc_dev_attr_t *attr,
                    doca_pcc_dev_results_t *results) {
    rt_now_ps = event->now_ps;
    sigjmp_buf jb;
    int sig = sigsetjmp(jb, 0);
    if (sig) return sig;
    rt_jump = &jb;
    doca_pcc_dev_user_algo(ctxt, event, attr, results);
    rt_jump = NULL;
    return 0;
}
