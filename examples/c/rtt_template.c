/* rtt_template.c: NVIDIA DOCA PCC's `rtt_template` reaction point, written
 * for rdmalab in the sample's C shape: delay-based AIMD driven by RTT
 * probes, one probe in flight per flow, rates as 20-bit fixed-point
 * fractions of line rate, factors in 16-bit fixed point.
 *
 * Copyright 2026 the rdmalab authors. Licensed under the Apache License,
 * Version 2.0. The behaviour follows the sample (DOCA 3.2.1+ defaults);
 * the code is rdmalab's. It uses only DOCA PCC's device API, so it builds
 * for a BlueField-3 as well (with DOCA's headers), except where marked.
 *
 * As rdmalab's Rust `doca-rtt`, it leaves out the high-utilisation mode and
 * answers a lost probe by asking for another (the sample's abort/retry).
 */
#include <doca_pcc_dev.h>
#include <doca_pcc_dev_algo_access.h>
#include <doca_pcc_dev_event.h>
#include <doca_pcc_dev_utils.h>

enum {
    PARAM_UPDATE_FACTOR,     /* fxp16 decrease step f */
    PARAM_AI,                /* fxp20 additive increase per RTT event */
    PARAM_BASE_RELATIVE_RTT, /* ns: target rtt - min_rtt */
    PARAM_NEW_FLOW_RATE,     /* fxp20 */
    PARAM_MIN_RATE,          /* fxp20 */
    PARAM_MAX_DELAY,         /* ns: an RTT this large counts as a CNP */
    PARAM_INITIAL_MIN_RTT,   /* ns */
    PARAM_NUM
};

/* The per-flow context (48 B, as on a BlueField-3). */
typedef struct {
    uint32_t cur_rate;
    uint32_t was_nack;
    uint32_t was_cnp;
    uint32_t min_rtt_lo, min_rtt_hi; /* ps */
    uint32_t answered;               /* RTT answers so far */
    uint32_t reserved[6];
} rtt_template_ctxt_t;

static void declare(uint32_t id, const char *name, uint32_t def, uint32_t max, uint32_t min) {
    uint32_t n = 0;
    while (name[n]) n++;
    doca_pcc_dev_algo_init_param(0, id, def, max, min, 1, n, (uint64_t)(uintptr_t)name);
}

void doca_pcc_dev_user_init(uint32_t *disable_event_bitmask) {
    struct doca_pcc_dev_algo_meta_data md = {0xBFFF, 0, 1, 0, 0};
    doca_pcc_dev_algo_init_metadata(0, &md, PARAM_NUM, 0);
    declare(PARAM_UPDATE_FACTOR, "UPDATE_FACTOR", 6553, 10 * (1 << 16), 0);
    declare(PARAM_AI, "AI", 52428, DOCA_PCC_DEV_MAX_RATE, 0);
    declare(PARAM_BASE_RELATIVE_RTT, "BASE_RELATIVE_RTT", 13000, 0xFFFFFFFF, 0);
    declare(PARAM_NEW_FLOW_RATE, "NEW_FLOW_RATE", DOCA_PCC_DEV_MAX_RATE, DOCA_PCC_DEV_MAX_RATE, 1);
    declare(PARAM_MIN_RATE, "MIN_RATE", 1 << (20 - 14), DOCA_PCC_DEV_MAX_RATE, 1);
    declare(PARAM_MAX_DELAY, "MAX_DELAY", 150000, 0xFFFFFFFF, 1);
    declare(PARAM_INITIAL_MIN_RTT, "INITIAL_MIN_RTT", 200000, 0xFFFFFFFF, 1);
    doca_pcc_dev_init_algo_slot(0, 0, 0, 1);
    /* RTT answers, CNPs and NACKs drive it; TX and ACK events are not needed. */
    *disable_event_bitmask |= (1 << DOCA_PCC_DEV_EVNT_ROCE_TX) | (1 << DOCA_PCC_DEV_EVNT_ROCE_ACK);
#ifdef RDMALAB_CC_H
    *disable_event_bitmask |= 1 << RDMALAB_EVNT_TIMEOUT;
#endif
}

/* rate x (1 - k f), as doca_pcc_dev_fxp_mult would. */
static uint32_t decrease(uint32_t rate, uint32_t k, uint32_t f) {
    uint64_t kf = (uint64_t)k * f;
    uint32_t factor = kf >= (1u << 16) ? 0 : (uint32_t)((1u << 16) - kf);
    return (uint32_t)(((uint64_t)rate * factor) >> 16);
}

static uint64_t min_rtt_ps(const rtt_template_ctxt_t *c) { return ((uint64_t)c->min_rtt_hi << 32) | c->min_rtt_lo; }
static void set_min_rtt_ps(rtt_template_ctxt_t *c, uint64_t v) {
    c->min_rtt_lo = (uint32_t)v;
    c->min_rtt_hi = (uint32_t)(v >> 32);
}

/* The core logic on one RTT sample (ps). */
static void on_rtt(rtt_template_ctxt_t *c, const uint32_t *param, uint64_t rtt) {
    c->answered++;
    /* The sample resets min_rtt on ~1/256 of samples; here every 256th. */
    if (c->answered % 256 == 0) set_min_rtt_ps(c, (uint64_t)param[PARAM_INITIAL_MIN_RTT] * 1000);
    if (rtt < min_rtt_ps(c)) set_min_rtt_ps(c, rtt);
    uint32_t f = param[PARAM_UPDATE_FACTOR];
    int congested = rtt >= (uint64_t)param[PARAM_MAX_DELAY] * 1000;
    uint64_t relative = rtt - min_rtt_ps(c);
    if (c->was_nack && congested)
        c->cur_rate = decrease(c->cur_rate, 5, f);
    else if (c->was_cnp || congested)
        c->cur_rate = decrease(c->cur_rate, 2, f);
    else if (relative > (uint64_t)param[PARAM_BASE_RELATIVE_RTT] * 1000)
        c->cur_rate = decrease(c->cur_rate, 1, f);
    else
        c->cur_rate = c->cur_rate + param[PARAM_AI] < c->cur_rate ? 0xFFFFFFFFu : c->cur_rate + param[PARAM_AI];
    if (c->cur_rate < param[PARAM_MIN_RATE]) c->cur_rate = param[PARAM_MIN_RATE];
    if (c->cur_rate > DOCA_PCC_DEV_MAX_RATE) c->cur_rate = DOCA_PCC_DEV_MAX_RATE;
    c->was_nack = 0;
    c->was_cnp = 0;
}

void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *algo_ctxt, doca_pcc_dev_event_t *event,
                            const doca_pcc_dev_attr_t *attr, doca_pcc_dev_results_t *results) {
    rtt_template_ctxt_t *c = (rtt_template_ctxt_t *)algo_ctxt->data;
    uint32_t *param = doca_pcc_dev_get_algo_params(doca_pcc_dev_get_ev_attr(event).port_num, attr->algo_slot);
    doca_pcc_dev_event_general_attr_t ev = doca_pcc_dev_get_ev_attr(event);

    if (c->cur_rate == 0) {
        /* A new flow: line rate, and a first probe. */
        c->cur_rate = param[PARAM_NEW_FLOW_RATE];
        set_min_rtt_ps(c, (uint64_t)param[PARAM_INITIAL_MIN_RTT] * 1000);
        results->rate = c->cur_rate;
        results->rtt_req = 1;
        return;
    }
    switch (ev.ev_type) {
    case DOCA_PCC_DEV_EVNT_ROCE_CNP:
        c->was_cnp = 1; /* the sample's "immediate reaction" hook stays empty */
        break;
    case DOCA_PCC_DEV_EVNT_ROCE_NACK:
        c->was_nack = 1;
        break;
    case DOCA_PCC_DEV_EVNT_RTT: {
#ifdef RDMALAB_CC_H
        int lost = ev.flags & RDMALAB_RTT_FLAG_LOST;
        uint64_t rtt = rdmalab_rtt_ps(event); /* T4 - T1, exact */
#else
        int lost = 0;
        uint64_t rtt = (uint64_t)(doca_pcc_dev_get_timestamp(event) - doca_pcc_dev_get_rtt_req_send_timestamp(event)) * 1000;
#endif
        if (!lost) {
            on_rtt(c, param, rtt);
            results->rate = c->cur_rate;
        }
        /* One probe in flight, continuously; a lost one is asked again. */
        results->rtt_req = 1;
        break;
    }
    default:
        break;
    }
}
