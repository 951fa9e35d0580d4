/* rdmalab_cc.h: the C interface of rdmalab's congestion controllers.
 *
 * Copyright 2026 the rdmalab authors. Licensed under the Apache License,
 * Version 2.0.
 *
 * A controller written against NVIDIA DOCA PCC's device API (BlueField-3
 * DPA) compiles against this header unchanged: the entry point, the event,
 * attribute and result types, the event getters, the fixed-point helpers
 * and the parameter registration carry DOCA PCC's names and signatures.
 * Their implementations are rdmalab's own. rdmalab adds, under
 * `rdmalab_` / `RDMALAB_` names:
 *   - events DOCA PCC does not raise: flow start, controller timers,
 *     retransmission timeouts, receive-side data (SwCC's RX events);
 *   - exact values beside DOCA's 32-bit ns timestamps: time in ps, the
 *     line and current rate in bit/s, RTTs in ps, acknowledged bytes;
 *   - results beyond a rate: a rate in bit/s, a window, timers.
 *
 * A controller implements
 *   void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *ctxt,
 *       doca_pcc_dev_event_t *event, const doca_pcc_dev_attr_t *attr,
 *       doca_pcc_dev_results_t *results);
 * and optionally doca_pcc_dev_user_init(uint32_t *disable_event_bitmask),
 * where it registers its parameters and turns off the events it does not
 * need (bit 1 << type). See docs/c-controllers.md.
 */
#ifndef RDMALAB_CC_H
#define RDMALAB_CC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RDMALAB_CC_ABI_VERSION 1

/* ---- Event types (DOCA PCC's values, then rdmalab's) ------------------ */
typedef enum {
    DOCA_PCC_DEV_EVNT_NULL = 0,
    DOCA_PCC_DEV_EVNT_FW = 1,
    DOCA_PCC_DEV_EVNT_ROCE_CNP = 2,
    DOCA_PCC_DEV_EVNT_ROCE_TX = 3,
    DOCA_PCC_DEV_EVNT_ROCE_ACK = 4,
    DOCA_PCC_DEV_EVNT_ROCE_NACK = 5,
    DOCA_PCC_DEV_EVNT_RTT = 6,
    /* rdmalab: the flow starts (before its first packet). */
    RDMALAB_EVNT_START = 16,
    /* rdmalab: a timer the controller armed expired; ev_subtype = slot. */
    RDMALAB_EVNT_TIMER = 17,
    /* rdmalab: the retransmission timer fired. */
    RDMALAB_EVNT_TIMEOUT = 18,
    /* rdmalab: data arrived at the flow's receiver (SwCC's RX event). */
    RDMALAB_EVNT_RX = 19,
    DOCA_PCC_DEV_EVNT_ROCE_TX_FOR_ACK_NACK = 31,
} doca_pcc_dev_event_type_enum;

/* NACK subtype (ev_subtype): rdmalab's receivers only raise sequence errors. */
#define DOCA_PCC_DEV_NACK_EVENT_SUBTYPE_OOS 2
/* TX flags (ev_attr.flags). */
#define DOCA_PCC_DEV_TX_FLAG_ACK_EXPECTED (1 << 0)
#define DOCA_PCC_DEV_TX_FLAG_OVERLOADED (1 << 1)
#define DOCA_PCC_DEV_TX_FLAG_RTT_REQ_SENT (1 << 2)
/* rdmalab: on an RTT event, the probe got no answer within nic.probe_timeout. */
#define RDMALAB_RTT_FLAG_LOST (1 << 6)
/* rdmalab: on an ACK, the data carried an ECN mark (DCTCP's ECE); on RX, CE. */
#define RDMALAB_FLAG_ECN (1 << 7)

/* ---- Rates and fixed point -------------------------------------------- */
#define DOCA_PCC_DEV_LOG_MAX_RATE 20
#define DOCA_PCC_DEV_MAX_RATE (1U << DOCA_PCC_DEV_LOG_MAX_RATE)
#define DOCA_PCC_DEV_DEFAULT_RATE ((DOCA_PCC_DEV_MAX_RATE >> 8) > 1 ? (DOCA_PCC_DEV_MAX_RATE >> 8) : 1)
#define DOCA_PCC_DEV_ALGO_SLOT_INTERNAL 0xF
#define DOCA_PCC_DEV_MAX_NUM_USER_SLOTS 8
#define DOCA_PCC_DEV_MAX_NUM_ALGOS 8
#define DOCA_PCC_DEV_MAX_NUM_PARAMS_PER_ALGO 0x2C
#define DOCA_PCC_DEV_MAX_NUM_COUNTERS_PER_ALGO 0x3F

/* ---- The per-flow context --------------------------------------------- */
/* Restored before each call and saved after it. DOCA PCC gives 12 words
 * (48 B) on a BlueField-3; rdmalab gives 32 (128 B, SwCC's context entry),
 * so a BlueField-3 algorithm fits and a bigger state does too. Zero at the
 * flow's start. */
#define RDMALAB_CC_CTXT_WORDS 32
typedef struct {
    uint32_t data[RDMALAB_CC_CTXT_WORDS];
} doca_pcc_dev_algo_ctxt_t;

/* ---- Attributes ------------------------------------------------------- */
typedef struct {
    uint32_t algo_slot : 4;
    uint32_t overload : 1;
    uint32_t reserved : 27;
} doca_pcc_dev_attr_t;

/* ---- Results ---------------------------------------------------------- */
/* The runtime fills `rate` with RDMALAB_RATE_UNCHANGED before each call;
 * leave it to keep the rate. Every other field starts at 0 (no action). */
#define RDMALAB_RATE_UNCHANGED 0xFFFFFFFFu
#define RDMALAB_CC_TIMER_SLOTS 4
enum { RDMALAB_TIMER_KEEP = 0, RDMALAB_TIMER_ARM = 1, RDMALAB_TIMER_CANCEL = 2 };
enum { RDMALAB_WINDOW_KEEP = 0, RDMALAB_WINDOW_SET = 1, RDMALAB_WINDOW_REMOVE = 2 };

typedef struct doca_pcc_dev_results {
    /* The new rate: a 20-bit fixed-point fraction of line rate in (0, 1<<20]. */
    uint32_t rate;
    /* Nonzero: send an RTT probe on the flow's path. */
    union {
        uint32_t rtt_req;
        uint32_t probe_req;
    };
    uint32_t probe_type_slot;
    /* rdmalab: a rate in bit/s instead of `rate` (nonzero wins). */
    uint64_t rdmalab_rate_bps;
    /* rdmalab: RDMALAB_WINDOW_SET with bytes in flight allowed, or _REMOVE. */
    uint32_t rdmalab_window_op;
    uint64_t rdmalab_window_bytes;
    /* rdmalab: per slot, RDMALAB_TIMER_ARM at rdmalab_timer_ps (absolute, ps)
     * or RDMALAB_TIMER_CANCEL. An armed timer raises RDMALAB_EVNT_TIMER. */
    uint32_t rdmalab_timer_op[RDMALAB_CC_TIMER_SLOTS];
    uint64_t rdmalab_timer_ps[RDMALAB_CC_TIMER_SLOTS];
} doca_pcc_dev_results_t;

/* ---- Events ----------------------------------------------------------- */
typedef struct {
    uint8_t ev_type;
    uint8_t ev_subtype;
    uint8_t port_num;
    uint8_t flags;
} doca_pcc_dev_event_general_attr_t;

typedef struct {
    uint16_t sent_32bytes;
    uint16_t sent_pkts;
} doca_pcc_dev_roce_tx_cntrs_t;

typedef struct {
    uint16_t num_coalesced;
    uint16_t reserved;
} doca_pcc_dev_ack_nack_cnp_extra_t;

/* Read it through the getters below, as DOCA PCC asks. */
typedef struct {
    doca_pcc_dev_event_general_attr_t ev_attr;
    uint32_t flow_tag;          /* the QP */
    uint32_t sn;                /* events raised for the flow so far */
    uint32_t timestamp;         /* ns, wraps at 2^32 */
    uint32_t first_timestamp;   /* ns: the first event folded into this one */
    uint32_t first_sn;
    uint16_t num_coalesced;
    uint16_t sent_32bytes;      /* TX: bytes / 32, rounded up, saturating */
    uint16_t sent_pkts;
    uint16_t reserved;
    uint32_t flow_qpn;
    uint32_t rtt_req_send_ts;   /* RTT: T1, ns */
    uint32_t rtt_req_recv_ts;   /* RTT: T2 and T3 are not modelled (0) */
    uint32_t rtt_resp_send_ts;
    /* rdmalab */
    uint64_t now_ps;
    uint64_t line_rate_bps;
    uint64_t cur_rate_bps;
    uint64_t rtt_ps;            /* ACK: from the echoed stamp; RTT: T4 - T1 */
    uint64_t bytes;             /* TX: sent; ACK: newly acknowledged; RX: arrived */
    uint64_t bytes_in_flight;
    uint32_t udp_sport;
    uint32_t hops;              /* ACK: switches the data crossed */
} doca_pcc_dev_event_t;

static inline doca_pcc_dev_event_general_attr_t doca_pcc_dev_get_ev_attr(doca_pcc_dev_event_t *e) { return e->ev_attr; }
static inline uint32_t doca_pcc_dev_get_flowtag(doca_pcc_dev_event_t *e) { return e->flow_tag; }
static inline uint32_t doca_pcc_dev_get_sn(doca_pcc_dev_event_t *e) { return e->sn; }
static inline uint32_t doca_pcc_dev_get_timestamp(doca_pcc_dev_event_t *e) { return e->timestamp; }
static inline uint32_t doca_pcc_dev_get_roce_first_timestamp(doca_pcc_dev_event_t *e) { return e->first_timestamp; }
static inline doca_pcc_dev_roce_tx_cntrs_t doca_pcc_dev_get_roce_tx_cntrs(doca_pcc_dev_event_t *e) {
    doca_pcc_dev_roce_tx_cntrs_t c = {e->sent_32bytes, e->sent_pkts};
    return c;
}
static inline uint32_t doca_pcc_dev_get_roce_ack_first_sn(doca_pcc_dev_event_t *e) { return e->first_sn; }
static inline doca_pcc_dev_ack_nack_cnp_extra_t doca_pcc_dev_get_ack_nack_cnp_extra(doca_pcc_dev_event_t *e) {
    doca_pcc_dev_ack_nack_cnp_extra_t x = {e->num_coalesced, 0};
    return x;
}
static inline uint32_t doca_pcc_dev_get_rtt_req_send_timestamp(doca_pcc_dev_event_t *e) { return e->rtt_req_send_ts; }
static inline uint32_t doca_pcc_dev_get_rtt_req_recv_timestamp(doca_pcc_dev_event_t *e) { return e->rtt_req_recv_ts; }
static inline uint32_t doca_pcc_dev_get_rtt_resp_send_timestamp(doca_pcc_dev_event_t *e) { return e->rtt_resp_send_ts; }
static inline uint32_t doca_pcc_dev_get_flow_qpn(doca_pcc_dev_event_t *e) { return e->flow_qpn; }

/* rdmalab getters. */
static inline uint64_t rdmalab_now_ps(const doca_pcc_dev_event_t *e) { return e->now_ps; }
static inline uint64_t rdmalab_line_rate_bps(const doca_pcc_dev_event_t *e) { return e->line_rate_bps; }
static inline uint64_t rdmalab_cur_rate_bps(const doca_pcc_dev_event_t *e) { return e->cur_rate_bps; }
static inline uint64_t rdmalab_rtt_ps(const doca_pcc_dev_event_t *e) { return e->rtt_ps; }
static inline uint64_t rdmalab_bytes(const doca_pcc_dev_event_t *e) { return e->bytes; }

/* ---- Fixed-point helpers (DOCA PCC's names) --------------------------- */
static inline uint64_t doca_pcc_dev_mult(uint32_t a, uint32_t b) { return (uint64_t)a * b; }
/* An fxp16 factor times a value: (a * b) >> 16. */
static inline uint32_t doca_pcc_dev_fxp_mult(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 16); }
/* The fxp16 reciprocal of an fxp16 value (0 gives UINT32_MAX). */
static inline uint32_t doca_pcc_dev_fxp_recip(uint32_t a) {
    return a == 0 ? UINT32_MAX : (uint32_t)((((uint64_t)1) << 32) / a);
}
/* Find last set: 1-based index of the highest set bit, 0 for 0. */
static inline uint32_t doca_pcc_dev_fls(uint32_t a) { return a == 0 ? 0 : 32 - (uint32_t)__builtin_clz(a); }

/* ---- Services (implemented by rdmalab's runtime) ---------------------- */
typedef enum { DOCA_PCC_DEV_STATUS_OK = 0, DOCA_PCC_DEV_STATUS_FAIL = 1 } doca_pcc_dev_error_t;

struct doca_pcc_dev_algo_meta_data {
    uint32_t algo_id;
    uint32_t algo_major_version;
    uint32_t algo_minor_version;
    uint32_t algo_desc_size;
    uint64_t algo_desc_addr;
};

doca_pcc_dev_error_t doca_pcc_dev_algo_init_metadata(uint32_t algo_idx, const struct doca_pcc_dev_algo_meta_data *md,
                                                     uint32_t param_num, uint32_t counter_num);
/* Register parameter `param_id` with its default, maximum, minimum and name
 * (desc): the scenario's cc.params sets it by that name, within [min, max]. */
doca_pcc_dev_error_t doca_pcc_dev_algo_init_param(uint32_t algo_idx, uint32_t param_id, uint32_t default_value,
                                                  uint32_t max_value, uint32_t min_value, uint32_t permissions,
                                                  uint32_t param_desc_size, uint64_t param_desc_addr);
doca_pcc_dev_error_t doca_pcc_dev_algo_init_counter(uint32_t algo_idx, uint32_t counter_id, uint32_t max_value,
                                                    uint32_t permissions, uint32_t counter_desc_size,
                                                    uint64_t counter_desc_addr);
doca_pcc_dev_error_t doca_pcc_dev_init_algo_slot(uint32_t portid, uint32_t algo_slot, uint32_t algo_idx,
                                                 uint32_t algo_en);
/* rdmalab runs one algorithm: every (port, slot) reads the same arrays. */
uint32_t *doca_pcc_dev_get_algo_params(uint32_t port_num, uint32_t algo_slot);
uint32_t *doca_pcc_dev_get_counters(uint32_t port_num, uint32_t algo_slot);
/* The simulated clock, in µs (DOCA PCC's DPA thread timer). */
uint32_t doca_pcc_dev_get_timer_lo(void);
uint64_t doca_pcc_dev_get_timer(void);
/* Formatted text to the run's standard error, prefixed with the controller. */
void doca_pcc_dev_printf(const char *format, ...);
/* No-ops in a simulator that runs one event at a time. */
static inline void doca_pcc_dev_fence_all(void) {}
static inline void doca_pcc_dev_fence_memory(void) {}
static inline void doca_pcc_dev_fence_io(void) {}
static inline uint32_t doca_pcc_dev_thread_rank(void) { return 0; }

/* ---- What the controller implements ----------------------------------- */
void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *algo_ctxt, doca_pcc_dev_event_t *event,
                            const doca_pcc_dev_attr_t *attr, doca_pcc_dev_results_t *results);
/* Optional (weak): called once per run before any event. */
void doca_pcc_dev_user_init(uint32_t *disable_event_bitmask) __attribute__((weak));

#ifdef __cplusplus
}
#endif
#endif /* RDMALAB_CC_H */
