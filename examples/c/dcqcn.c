/* dcqcn.c: the DCQCN reaction point in C, in the timer-driven form of the
 * ns-3 HPCC simulator and rdmalab's Rust `dcqcn`, with the same arithmetic
 * (IEEE doubles, the same order of operations), so the two give the same
 * bits.
 *
 * Copyright 2026 the rdmalab authors. Licensed under the Apache License,
 * Version 2.0.
 *
 * DOCA PCC has no timers and no picosecond clock: this controller uses
 * rdmalab's extensions (RDMALAB_EVNT_START and _TIMER, rdmalab_now_ps,
 * rdmalab_rate_bps, rdmalab_timer_*), as SwCC's DCQCN runs on its timer
 * events (Table 3). The byte counter is left out (it needs TX events, which
 * the Rust version only asks for when it is on).
 *
 * State: rate rc, target rt, alpha; alpha decays once per alpha period
 * (counted from the first CNP); a CNP arms a decrease check 1 ns after the
 * next decrease-period boundary; the increase timer raises rt by AI or HAI
 * after F fast-recovery stages and moves rc halfway to rt.
 */
#include <math.h>
#include <string.h>
#include "rdmalab_cc.h"

enum {
    P_G_FXP16,                  /* alpha gain g, fxp16 (256 = 1/256) */
    P_ALPHA_PERIOD_NS,
    P_DECREASE_PERIOD_NS,
    P_INCREASE_PERIOD_NS,
    P_FAST_RECOVERY_STAGES,
    P_RATE_AI_MBPS,
    P_RATE_HAI_MBPS,
    P_MIN_RATE_MBPS,
    P_CLAMP_TARGET_RATE,
    P_RATE_ON_FIRST_CNP_FXP16,  /* 65536 = keep the rate */
    P_NUM
};
enum { DECREASE_SLOT = 0, INCREASE_SLOT = 1 };

typedef struct {
    double rc, rt, alpha;
    uint64_t epoch_ps;
    uint64_t alpha_boundaries_done;
    uint32_t has_epoch;
    uint32_t stage;
    uint32_t cnp_in_alpha_period;
    uint32_t cnp_since_decrease_check;
    uint32_t decrease_check_armed;
} dcqcn_t;

_Static_assert(sizeof(dcqcn_t) <= sizeof(doca_pcc_dev_algo_ctxt_t), "the state fits the context");

static void declare(uint32_t id, const char *name, uint32_t def, uint32_t max, uint32_t min) {
    doca_pcc_dev_algo_init_param(0, id, def, max, min, 1, (uint32_t)strlen(name), (uint64_t)(uintptr_t)name);
}

void doca_pcc_dev_user_init(uint32_t *disable_event_bitmask) {
    struct doca_pcc_dev_algo_meta_data md = {0xDC, 1, 0, 0, 0};
    doca_pcc_dev_algo_init_metadata(0, &md, P_NUM, 0);
    declare(P_G_FXP16, "G_FXP16", 256, 65536, 1);
    declare(P_ALPHA_PERIOD_NS, "ALPHA_PERIOD_NS", 1000, 0xFFFFFFFF, 1);
    declare(P_DECREASE_PERIOD_NS, "DECREASE_PERIOD_NS", 4000, 0xFFFFFFFF, 1);
    declare(P_INCREASE_PERIOD_NS, "INCREASE_PERIOD_NS", 300000, 0xFFFFFFFF, 1);
    declare(P_FAST_RECOVERY_STAGES, "FAST_RECOVERY_STAGES", 1, 1000, 0);
    declare(P_RATE_AI_MBPS, "RATE_AI_MBPS", 20, 0xFFFFFFFF, 1);
    declare(P_RATE_HAI_MBPS, "RATE_HAI_MBPS", 200, 0xFFFFFFFF, 1);
    declare(P_MIN_RATE_MBPS, "MIN_RATE_MBPS", 1000, 0xFFFFFFFF, 1);
    declare(P_CLAMP_TARGET_RATE, "CLAMP_TARGET_RATE", 0, 1, 0);
    declare(P_RATE_ON_FIRST_CNP_FXP16, "RATE_ON_FIRST_CNP_FXP16", 65536, 65536, 1);
    /* CNPs and its own timers drive it. */
    *disable_event_bitmask |= (1 << DOCA_PCC_DEV_EVNT_ROCE_TX) | (1 << DOCA_PCC_DEV_EVNT_ROCE_ACK) |
                              (1 << DOCA_PCC_DEV_EVNT_ROCE_NACK) | (1 << DOCA_PCC_DEV_EVNT_RTT) |
                              (1 << RDMALAB_EVNT_TIMEOUT);
}

/* x^n by squaring, in the order of compiler-rt's __powidf2 (Rust's powi). */
static double powi(double x, uint64_t n) {
    int b = n > 0x7FFFFFFF ? 0x7FFFFFFF : (int)n;
    double r = 1.0;
    for (;;) {
        if (b & 1) r *= x;
        b /= 2;
        if (b == 0) break;
        x *= x;
    }
    return r;
}

static void advance_alpha(dcqcn_t *s, const uint32_t *p, uint64_t now) {
    if (!s->has_epoch) return;
    uint64_t period = (uint64_t)p[P_ALPHA_PERIOD_NS] * 1000;
    uint64_t k = (now - s->epoch_ps) / (period ? period : 1);
    if (k > s->alpha_boundaries_done) {
        uint64_t n = k - s->alpha_boundaries_done;
        double g = p[P_G_FXP16] / 65536.0;
        double first = s->cnp_in_alpha_period ? 1.0 : 0.0;
        s->alpha = (1.0 - g) * s->alpha + g * first;
        if (n > 1) s->alpha *= powi(1.0 - g, n - 1);
        s->cnp_in_alpha_period = 0;
        s->alpha_boundaries_done = k;
    }
}

/* 1 ns after the next decrease-period boundary since the first CNP. */
static uint64_t next_decrease_check(const dcqcn_t *s, const uint32_t *p, uint64_t now) {
    uint64_t period = (uint64_t)p[P_DECREASE_PERIOD_NS] * 1000;
    if (period == 0) period = 1;
    uint64_t offset = 1000, since = now - s->epoch_ps;
    uint64_t k = since + 1 > offset ? (since - offset) / period + 1 : 1;
    if (k < 1) k = 1;
    return s->epoch_ps + k * period + offset;
}

static double min_d(double a, double b) { return a < b ? a : b; }
static double max_d(double a, double b) { return a > b ? a : b; }

static void increase(dcqcn_t *s, const uint32_t *p, double line) {
    uint32_t f = p[P_FAST_RECOVERY_STAGES];
    if (s->stage == f)
        s->rt = min_d(s->rt + p[P_RATE_AI_MBPS] * 1e6, line);
    else if (s->stage > f)
        s->rt = min_d(s->rt + p[P_RATE_HAI_MBPS] * 1e6, line);
    s->rc = min_d((s->rc + s->rt) / 2.0, line);
    if (s->stage != 0xFFFFFFFFu) s->stage++;
}

static void emit_rate(const dcqcn_t *s, doca_pcc_dev_results_t *r) {
    r->rdmalab_rate_bps = (uint64_t)max_d(round(s->rc), 1.0);
}

static void arm(doca_pcc_dev_results_t *r, int slot, uint64_t at) {
    r->rdmalab_timer_op[slot] = RDMALAB_TIMER_ARM;
    r->rdmalab_timer_ps[slot] = at;
}

void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *algo_ctxt, doca_pcc_dev_event_t *event,
                            const doca_pcc_dev_attr_t *attr, doca_pcc_dev_results_t *results) {
    dcqcn_t s;
    memcpy(&s, algo_ctxt->data, sizeof s);
    const uint32_t *p = doca_pcc_dev_get_algo_params(0, attr->algo_slot);
    doca_pcc_dev_event_general_attr_t ev = doca_pcc_dev_get_ev_attr(event);
    double line = (double)rdmalab_line_rate_bps(event);
    uint64_t now = rdmalab_now_ps(event);

    switch (ev.ev_type) {
    case RDMALAB_EVNT_START:
        s.rc = line;
        s.rt = s.rc;
        s.alpha = 1.0;
        break;
    case DOCA_PCC_DEV_EVNT_ROCE_CNP:
        if (!s.has_epoch) {
            s.has_epoch = 1;
            s.epoch_ps = now;
            s.alpha = 1.0;
            s.alpha_boundaries_done = 0;
            s.rc *= p[P_RATE_ON_FIRST_CNP_FXP16] / 65536.0;
            s.rt = s.rc;
            emit_rate(&s, results);
        } else {
            advance_alpha(&s, p, now);
            s.cnp_in_alpha_period = 1;
        }
        s.cnp_since_decrease_check = 1;
        if (!s.decrease_check_armed) {
            s.decrease_check_armed = 1;
            arm(results, DECREASE_SLOT, next_decrease_check(&s, p, now));
        }
        break;
    case RDMALAB_EVNT_TIMER:
        if (ev.ev_subtype == DECREASE_SLOT) {
            s.decrease_check_armed = 0;
            if (s.cnp_since_decrease_check) {
                advance_alpha(&s, p, now);
                s.cnp_since_decrease_check = 0;
                if (p[P_CLAMP_TARGET_RATE] || s.stage != 0) s.rt = s.rc;
                s.rc = max_d(s.rc * (1.0 - s.alpha / 2.0), p[P_MIN_RATE_MBPS] * 1e6);
                s.stage = 0;
                emit_rate(&s, results);
                arm(results, INCREASE_SLOT, now + (uint64_t)p[P_INCREASE_PERIOD_NS] * 1000);
            }
        } else if (ev.ev_subtype == INCREASE_SLOT) {
            increase(&s, p, line);
            emit_rate(&s, results);
            if (!(s.rc >= line && s.rt >= line))
                arm(results, INCREASE_SLOT, now + (uint64_t)p[P_INCREASE_PERIOD_NS] * 1000);
        }
        break;
    default:
        break;
    }
    memcpy(algo_ctxt->data, &s, sizeof s);
}
