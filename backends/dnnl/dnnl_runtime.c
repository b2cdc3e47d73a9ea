/* dlc's oneDNN partition runtime: prepended (as static code) to every partition's C
 * source by backends/dnnl/codegen.py, which appends the partition's tables (values and
 * primitives) and its entry point.
 *
 * One engine per process (weak function: every partition object linked into one
 * library shares the first definition) and one stream per thread. A partition builds its
 * primitives on its first call (under its mutex): memory descriptors with
 * dnnl_format_tag_any for weights and for values inside the partition, so oneDNN picks
 * its blocked layouts; the constant weights reordered once into that layout and kept;
 * a reorder at the partition's edges only where a primitive's layout differs from the
 * plain row-major layout of the tensors dlc passes. Later calls only set data handles
 * and execute. Calls of one partition are serialized by its mutex, as its buffers for
 * the values inside it are allocated once. Every failure returns a nonzero status (and
 * prints one line naming the oneDNN call to stderr, once).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "oneapi/dnnl/dnnl.h"

#define DLCD_MAX_POST 8
#define DLCD_MAX_SRC 16  /* a concat's inputs */
#define DLCD_MAX_IN (3 + DLCD_MAX_POST + DLCD_MAX_SRC)

enum { DLCD_ARG = 0, DLCD_OUT = 1, DLCD_TMP = 2 };
enum { DLCD_CONV = 0, DLCD_MATMUL = 1, DLCD_POOL_MAX = 2, DLCD_POOL_AVG_INC = 3,
       DLCD_POOL_AVG_EXC = 4, DLCD_ELTWISE_RELU = 5, DLCD_BINARY_ADD = 6,
       DLCD_CONCAT = 7 };
enum { DLCD_POST_RELU = 0, DLCD_POST_ADD = 1, DLCD_POST_CLIP = 2 };

/* a tensor as one primitive sees it: where its memory is (an argument, a result, or a
 * buffer of the partition) and its logical dims; strides all 0 = its layout is the one
 * its producer picked (format any), else dense with these strides */
typedef struct {
    int where, index, ndims;
    dnnl_dims_t dims;     /* DNNL_MAX_NDIMS entries, the first ndims used */
    dnnl_dims_t strides;
    int last;             /* DLCD_TMP: the last op that reads it (its buffer is free after) */
} dlcd_value;

typedef struct { int kind, value; float alpha, beta; } dlcd_post;

typedef struct {
    int kind;
    int src, wei, bias, dst;   /* value ids, -1: none */
    int const_wei;             /* weights are a constant: reorder once, keep */
    int64_t strides[2], kernel[2], dil[2], pad_l[2], pad_r[2];
    int npost;
    dlcd_post post[DLCD_MAX_POST];
    int nsrc, axis;            /* a concat: its inputs (srcs) along axis */
    int srcs[DLCD_MAX_SRC];
} dlcd_op;

typedef struct {           /* one input of a primitive */
    int arg, value;
    dnnl_memory_t user, mem;   /* the value's memory; mem = user or the reordered copy */
    dnnl_primitive_t reorder;  /* NULL: none needed */
    dnnl_memory_t reorder_pad;
    int once;                  /* reorder done at init, never again (constant weights) */
} dlcd_input;

typedef struct {
    dnnl_primitive_t prim;
    int nin;
    dlcd_input in[DLCD_MAX_IN];
    int dst_value;
    dnnl_memory_t dst_mem, dst_user;
    dnnl_primitive_t dst_reorder;
    dnnl_memory_t dst_reorder_pad;
    dnnl_memory_t scratchpad;  /* NULL: the primitive needs none */
} dlcd_op_state;

typedef struct {
    const char *name;
    int nvalues, nops, nargs;
    const dlcd_value *values;
    const dlcd_op *ops;
    dlcd_op_state *state;
    dnnl_memory_desc_t *md;   /* per value: its descriptor once known */
    void **buffers;           /* per DLCD_TMP value: its buffer */
    pthread_mutex_t *mutex;
    int *ready;               /* 0: not built, 1: built, -1: failed */
    void **scratch;           /* the primitives' scratchpad: one buffer, calls are serialized */
} dlcd_partition;

static void dlcd_report(const dlcd_partition *p, const char *what, dnnl_status_t s) {
    fprintf(stderr, "dlc dnnl partition %s: %s failed (dnnl_status %d)\n", p->name, what, (int)s);
}

#define DLCD_CHECK(call, what)                         \
    do {                                               \
        dnnl_status_t s_ = (call);                     \
        if (s_ != dnnl_success) {                      \
            dlcd_report(p, what, s_);                  \
            return 1;                                  \
        }                                              \
    } while (0)

/* the process's CPU engine, created once (weak: one copy per linked library) */
static pthread_once_t dlcd_engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t dlcd_engine_value;
static dnnl_status_t dlcd_engine_status;
static void dlcd_engine_make(void) {
    dlcd_engine_status = dnnl_engine_create(&dlcd_engine_value, dnnl_cpu, 0);
}
__attribute__((weak)) dnnl_engine_t dlc_dnnl_engine(dnnl_status_t *status) {
    pthread_once(&dlcd_engine_once, dlcd_engine_make);
    *status = dlcd_engine_status;
    return dlcd_engine_value;
}

/* one stream per thread: a CPU stream is cheap, and never shared between threads */
static __thread dnnl_stream_t dlcd_stream_value;
__attribute__((weak)) dnnl_stream_t dlc_dnnl_stream(dnnl_engine_t engine, dnnl_status_t *status) {
    *status = dnnl_success;
    if (!dlcd_stream_value)
        *status = dnnl_stream_create(&dlcd_stream_value, engine, dnnl_stream_default_flags);
    return dlcd_stream_value;
}

static int dlcd_plain_md(const dlcd_partition *p, const dlcd_value *v, dnnl_memory_desc_t *md) {
    DLCD_CHECK(dnnl_memory_desc_create_with_strides(md, v->ndims, v->dims, dnnl_f32, v->strides),
               "dnnl_memory_desc_create_with_strides");
    return 0;
}

static int dlcd_is_any(const dlcd_value *v) {
    for (int i = 0; i < v->ndims; i++)
        if (v->strides[i]) return 0;
    return 1;
}

/* the descriptor a primitive is created with for value `id`: known (an input, a result
 * or a value already produced) or format any (a value this primitive produces) */
static int dlcd_md_for(const dlcd_partition *p, int id, int any_ok, dnnl_memory_desc_t *md) {
    const dlcd_value *v = &p->values[id];
    if (p->md[id]) return dnnl_memory_desc_clone(md, p->md[id]) != dnnl_success;
    /* a primitive's own result: let it pick (a result of the partition is reordered to
     * its plain layout afterwards: cheaper than a primitive bound to that layout, such
     * as a pool that falls back to oneDNN's reference code) */
    if (any_ok && ((v->where == DLCD_TMP && dlcd_is_any(v)) || v->where == DLCD_OUT)) {
        DLCD_CHECK(dnnl_memory_desc_create_with_tag(md, v->ndims, v->dims, dnnl_f32, dnnl_format_tag_any),
                   "dnnl_memory_desc_create_with_tag(any)");
        return 0;
    }
    if (dlcd_is_any(v)) {  /* read before it is produced: a bug in the tables */
        fprintf(stderr, "dlc dnnl partition %s: value %d has no layout\n", p->name, id);
        return 1;
    }
    if (dlcd_plain_md(p, v, md)) return 1;
    return 0;
}

/* a reorder primitive from `from` to `to`, with its own scratchpad (see dlcd_make_pd) */
static int dlcd_make_reorder(const dlcd_partition *p, dnnl_engine_t eng, const_dnnl_memory_desc_t from,
                             const_dnnl_memory_desc_t to, dnnl_primitive_t *r, dnnl_memory_t *pad) {
    dnnl_primitive_attr_t attr;
    dnnl_primitive_desc_t rpd;
    DLCD_CHECK(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
    DLCD_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
               "dnnl_primitive_attr_set_scratchpad_mode");
    DLCD_CHECK(dnnl_reorder_primitive_desc_create(&rpd, from, eng, to, eng, attr),
               "dnnl_reorder_primitive_desc_create");
    DLCD_CHECK(dnnl_primitive_create(r, rpd), "dnnl_primitive_create(reorder)");
    const_dnnl_memory_desc_t md = dnnl_primitive_desc_query_md(rpd, dnnl_query_scratchpad_md, 0);
    *pad = NULL;
    if (md && dnnl_memory_desc_get_size(md))
        DLCD_CHECK(dnnl_memory_create(pad, md, eng, DNNL_MEMORY_ALLOCATE), "dnnl_memory_create");
    dnnl_primitive_desc_destroy(rpd);
    dnnl_primitive_attr_destroy(attr);
    return 0;
}

/* an input of op `st`: the value's memory, and a reorder into `want` when the primitive
 * wants another layout */
static int dlcd_add_input(const dlcd_partition *p, dnnl_engine_t eng, dlcd_op_state *st, int arg,
                          int id, const_dnnl_memory_desc_t want, int once) {
    dlcd_input *in = &st->in[st->nin++];
    in->arg = arg;
    in->value = id;
    in->once = once;
    dnnl_memory_desc_t have;
    if (dlcd_md_for(p, id, 0, &have)) return 1;
    DLCD_CHECK(dnnl_memory_create(&in->user, have, eng, DNNL_MEMORY_NONE), "dnnl_memory_create");
    if (want == NULL || dnnl_memory_desc_equal(have, want)) {
        in->mem = in->user;
    } else {
        if (dlcd_make_reorder(p, eng, have, want, &in->reorder, &in->reorder_pad)) return 1;
        DLCD_CHECK(dnnl_memory_create(&in->mem, want, eng, DNNL_MEMORY_ALLOCATE), "dnnl_memory_create");
    }
    dnnl_memory_desc_destroy(have);
    return 0;
}

static void *dlcd_handle(const dlcd_partition *p, int id, void **args, void **outs) {
    const dlcd_value *v = &p->values[id];
    if (v->where == DLCD_ARG) return args[v->index];
    if (v->where == DLCD_OUT) return outs[v->index];
    return p->buffers[id];
}

static int dlcd_exec(const dlcd_partition *p, dnnl_stream_t stream, dnnl_primitive_t prim,
                     int nargs, const dnnl_exec_arg_t *args) {
    DLCD_CHECK(dnnl_primitive_execute(prim, stream, nargs, args), "dnnl_primitive_execute");
    return 0;
}

static int dlcd_reorder(const dlcd_partition *p, dnnl_stream_t stream, dnnl_primitive_t r,
                        dnnl_memory_t pad, dnnl_memory_t from, dnnl_memory_t to) {
    dnnl_exec_arg_t a[3] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, pad}};
    return dlcd_exec(p, stream, r, pad ? 3 : 2, a);
}

/* the primitive descriptor of op `o` (attr: its post-ops) */
static int dlcd_make_pd(const dlcd_partition *p, dnnl_engine_t eng, const dlcd_op *o,
                        dnnl_primitive_desc_t *pd) {
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t po;
    DLCD_CHECK(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
    /* the scratchpad is the partition's own: oneDNN's default (library mode) ties every
     * primitive to one buffer of the thread that created it, which two partitions
     * running on two threads would then share */
    DLCD_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
               "dnnl_primitive_attr_set_scratchpad_mode");
    DLCD_CHECK(dnnl_post_ops_create(&po), "dnnl_post_ops_create");
    for (int i = 0; i < o->npost; i++) {
        const dlcd_post *q = &o->post[i];
        if (q->kind == DLCD_POST_RELU) {
            DLCD_CHECK(dnnl_post_ops_append_eltwise(po, dnnl_eltwise_relu, 0.f, 0.f), "append_eltwise");
        } else if (q->kind == DLCD_POST_CLIP) {
            DLCD_CHECK(dnnl_post_ops_append_eltwise(po, dnnl_eltwise_clip, q->alpha, q->beta), "append_eltwise");
        } else {
            dnnl_memory_desc_t md;
            if (dlcd_md_for(p, q->value, 0, &md)) return 1;
            DLCD_CHECK(dnnl_post_ops_append_binary(po, dnnl_binary_add, md), "append_binary");
            dnnl_memory_desc_destroy(md);
        }
    }
    DLCD_CHECK(dnnl_primitive_attr_set_post_ops(attr, po), "dnnl_primitive_attr_set_post_ops");
    dnnl_post_ops_destroy(po);
    dnnl_memory_desc_t src, wei = NULL, bias = NULL, dst;
    if (o->kind == DLCD_CONCAT) {
        dnnl_memory_desc_t mds[DLCD_MAX_SRC];
        for (int i = 0; i < o->nsrc; i++)
            if (dlcd_md_for(p, o->srcs[i], 0, &mds[i])) return 1;
        if (dlcd_md_for(p, o->dst, 1, &dst)) return 1;
        dnnl_status_t s = dnnl_concat_primitive_desc_create(pd, eng, dst, o->nsrc, o->axis,
                                                            (const_dnnl_memory_desc_t *)mds, attr);
        if (s != dnnl_success) {
            dlcd_report(p, "creating the concat primitive descriptor", s);
            return 1;
        }
        for (int i = 0; i < o->nsrc; i++) dnnl_memory_desc_destroy(mds[i]);
        dnnl_memory_desc_destroy(dst);
        dnnl_primitive_attr_destroy(attr);
        return 0;
    }
    if (o->kind == DLCD_CONV) {  /* any: the convolution picks its input layout too */
        const dlcd_value *v = &p->values[o->src];
        DLCD_CHECK(dnnl_memory_desc_create_with_tag(&src, v->ndims, v->dims, dnnl_f32, dnnl_format_tag_any),
                   "dnnl_memory_desc_create_with_tag(any)");
    } else if (dlcd_md_for(p, o->src, 0, &src)) {
        return 1;
    }
    if (dlcd_md_for(p, o->dst, 1, &dst)) return 1;
    dnnl_status_t s;
    if (o->kind == DLCD_CONV || o->kind == DLCD_MATMUL) {
        const dlcd_value *w = &p->values[o->wei];
        if (o->const_wei) {
            DLCD_CHECK(dnnl_memory_desc_create_with_tag(&wei, w->ndims, w->dims, dnnl_f32, dnnl_format_tag_any),
                       "dnnl_memory_desc_create_with_tag(any)");
        } else if (dlcd_md_for(p, o->wei, 0, &wei)) {
            return 1;
        }
        if (o->bias >= 0 && dlcd_md_for(p, o->bias, 0, &bias)) return 1;
    }
    if (o->kind == DLCD_CONV) {
        dnnl_dims_t st = {o->strides[0], o->strides[1]}, dl = {o->dil[0], o->dil[1]};
        dnnl_dims_t pl = {o->pad_l[0], o->pad_l[1]}, pr = {o->pad_r[0], o->pad_r[1]};
        s = dnnl_convolution_forward_primitive_desc_create(pd, eng, dnnl_forward_inference,
                dnnl_convolution_direct, src, wei, bias, dst, st, dl, pl, pr, attr);
    } else if (o->kind == DLCD_MATMUL) {
        s = dnnl_matmul_primitive_desc_create(pd, eng, src, wei, bias, dst, attr);
    } else if (o->kind == DLCD_ELTWISE_RELU) {
        s = dnnl_eltwise_forward_primitive_desc_create(pd, eng, dnnl_forward_inference,
                dnnl_eltwise_relu, src, dst, 0.f, 0.f, attr);
    } else if (o->kind == DLCD_BINARY_ADD) {
        dnnl_memory_desc_t src1;
        if (dlcd_md_for(p, o->wei, 0, &src1)) return 1;
        s = dnnl_binary_primitive_desc_create(pd, eng, dnnl_binary_add, src, src1, dst, attr);
        dnnl_memory_desc_destroy(src1);
    } else {
        dnnl_alg_kind_t alg = o->kind == DLCD_POOL_MAX ? dnnl_pooling_max
                            : o->kind == DLCD_POOL_AVG_INC ? dnnl_pooling_avg_include_padding
                            : dnnl_pooling_avg_exclude_padding;
        dnnl_dims_t st = {o->strides[0], o->strides[1]}, k = {o->kernel[0], o->kernel[1]};
        dnnl_dims_t dl = {o->dil[0], o->dil[1]};
        dnnl_dims_t pl = {o->pad_l[0], o->pad_l[1]}, pr = {o->pad_r[0], o->pad_r[1]};
        s = dnnl_pooling_forward_primitive_desc_create(pd, eng, dnnl_forward_inference, alg,
                src, dst, st, k, dl, pl, pr, attr);
    }
    if (s != dnnl_success) {
        dlcd_report(p, "creating the primitive descriptor", s);
        return 1;
    }
    dnnl_memory_desc_destroy(src);
    dnnl_memory_desc_destroy(dst);
    if (wei) dnnl_memory_desc_destroy(wei);
    if (bias) dnnl_memory_desc_destroy(bias);
    dnnl_primitive_attr_destroy(attr);
    return 0;
}

/* build op `i`: its primitive, its inputs' reorders, its destination */
static int dlcd_build_op(const dlcd_partition *p, dnnl_engine_t eng, dnnl_stream_t stream, int i,
                         void **args) {
    const dlcd_op *o = &p->ops[i];
    dlcd_op_state *st = &p->state[i];
    dnnl_primitive_desc_t pd;
    if (dlcd_make_pd(p, eng, o, &pd)) return 1;
    DLCD_CHECK(dnnl_primitive_create(&st->prim, pd), "dnnl_primitive_create");
    const_dnnl_memory_desc_t pad = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (pad && dnnl_memory_desc_get_size(pad))
        DLCD_CHECK(dnnl_memory_create(&st->scratchpad, pad, eng, DNNL_MEMORY_NONE), "dnnl_memory_create");
    int has_wei = o->kind == DLCD_CONV || o->kind == DLCD_MATMUL;
    for (int i = 0; i < o->nsrc; i++)
        if (dlcd_add_input(p, eng, st, DNNL_ARG_MULTIPLE_SRC + i, o->srcs[i],
                           dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, i), 0)) return 1;
    if (o->kind != DLCD_CONCAT &&
        dlcd_add_input(p, eng, st, DNNL_ARG_SRC, o->src,
                       dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), 0)) return 1;
    if (o->kind == DLCD_BINARY_ADD &&
        dlcd_add_input(p, eng, st, DNNL_ARG_SRC_1, o->wei,
                       dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 1), 0)) return 1;
    if (has_wei) {
        if (dlcd_add_input(p, eng, st, DNNL_ARG_WEIGHTS, o->wei,
                           dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), o->const_wei)) return 1;
        if (o->bias >= 0 && dlcd_add_input(p, eng, st, DNNL_ARG_BIAS, o->bias, NULL, 0)) return 1;
    }
    for (int k = 0; k < o->npost; k++)
        if (o->post[k].kind == DLCD_POST_ADD &&
            dlcd_add_input(p, eng, st, DNNL_ARG_ATTR_MULTIPLE_POST_OP(k) | DNNL_ARG_SRC_1,
                           o->post[k].value, NULL, 0)) return 1;
    /* the destination: the value takes the primitive's layout inside the partition; a
     * result (plain layout) gets a reorder when the primitive picked another */
    const_dnnl_memory_desc_t got = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    const dlcd_value *dv = &p->values[o->dst];
    st->dst_value = o->dst;
    if (dv->where == DLCD_TMP) {
        DLCD_CHECK(dnnl_memory_desc_clone(&p->md[o->dst], got), "dnnl_memory_desc_clone");
        /* its buffer: dlcd_build gives it one (shared with values no longer read) */
        DLCD_CHECK(dnnl_memory_create(&st->dst_mem, got, eng, DNNL_MEMORY_NONE), "dnnl_memory_create");
    } else {
        dnnl_memory_desc_t plain;
        if (dlcd_plain_md(p, dv, &plain)) return 1;
        DLCD_CHECK(dnnl_memory_desc_clone(&p->md[o->dst], plain), "dnnl_memory_desc_clone");
        DLCD_CHECK(dnnl_memory_create(&st->dst_user, plain, eng, DNNL_MEMORY_NONE), "dnnl_memory_create");
        if (dnnl_memory_desc_equal(plain, got)) {
            st->dst_mem = st->dst_user;
        } else {
            if (dlcd_make_reorder(p, eng, got, plain, &st->dst_reorder, &st->dst_reorder_pad)) return 1;
            DLCD_CHECK(dnnl_memory_create(&st->dst_mem, got, eng, DNNL_MEMORY_ALLOCATE), "dnnl_memory_create");
        }
        dnnl_memory_desc_destroy(plain);
    }
    dnnl_primitive_desc_destroy(pd);
    /* constant weights: reordered into the primitive's layout now, once */
    for (int k = 0; k < st->nin; k++) {
        dlcd_input *in = &st->in[k];
        if (!in->once) continue;
        DLCD_CHECK(dnnl_memory_set_data_handle(in->user, dlcd_handle(p, in->value, args, NULL)),
                   "dnnl_memory_set_data_handle");
        if (in->reorder) {
            if (dlcd_reorder(p, stream, in->reorder, in->reorder_pad, in->user, in->mem)) return 1;
            DLCD_CHECK(dnnl_stream_wait(stream), "dnnl_stream_wait");
        } else {  /* same layout: keep a copy, the caller's buffer is not ours to keep */
            const_dnnl_memory_desc_t md;
            DLCD_CHECK(dnnl_memory_get_memory_desc(in->user, &md), "dnnl_memory_get_memory_desc");
            size_t size = dnnl_memory_desc_get_size(md);
            DLCD_CHECK(dnnl_memory_create(&in->mem, md, eng, DNNL_MEMORY_ALLOCATE), "dnnl_memory_create");
            void *to;
            DLCD_CHECK(dnnl_memory_get_data_handle(in->mem, &to), "dnnl_memory_get_data_handle");
            memcpy(to, dlcd_handle(p, in->value, args, NULL), size);
        }
    }
    return 0;
}

/* the buffers of the values inside the partition, assigned in execution order: a value
 * takes the smallest free block that is large enough (or a new one), and its block is
 * free again after the last op that reads it. The ops run in this order on every call. */
typedef struct { void *ptr; size_t size; int busy; } dlcd_block;

static int dlcd_assign_buffer(const dlcd_partition *p, dlcd_block *blocks, int *nblocks, int *block_of,
                              int id) {
    size_t size = dnnl_memory_desc_get_size(p->md[id]) + 1;
    int pick = -1;
    for (int b = 0; b < *nblocks; b++)
        if (!blocks[b].busy && blocks[b].size >= size && (pick < 0 || blocks[b].size < blocks[pick].size))
            pick = b;
    if (pick < 0) {
        pick = (*nblocks)++;
        blocks[pick].ptr = malloc(size);
        blocks[pick].size = size;
        if (!blocks[pick].ptr) return 1;
    }
    blocks[pick].busy = 1;
    block_of[id] = pick;
    p->buffers[id] = blocks[pick].ptr;
    return 0;
}

static int dlcd_build(const dlcd_partition *p, dnnl_engine_t eng, dnnl_stream_t stream, void **args) {
    size_t most = 0;
    dlcd_block *blocks = calloc((size_t)p->nvalues, sizeof *blocks);
    int *block_of = calloc((size_t)p->nvalues, sizeof *block_of), nblocks = 0;
    if (!blocks || !block_of) return 1;
    for (int i = 0; i < p->nops; i++) {
        if (dlcd_build_op(p, eng, stream, i, args)) return 1;
        int dst = p->ops[i].dst;
        if (p->values[dst].where == DLCD_TMP) {
            if (dlcd_assign_buffer(p, blocks, &nblocks, block_of, dst)) return 1;
            DLCD_CHECK(dnnl_memory_set_data_handle(p->state[i].dst_mem, p->buffers[dst]),
                       "dnnl_memory_set_data_handle");
        }
        for (int v = 0; v < p->nvalues; v++)  /* read for the last time by op i */
            if (p->values[v].where == DLCD_TMP && p->values[v].last == i)
                blocks[block_of[v]].busy = 0;
        if (p->state[i].scratchpad) {
            const_dnnl_memory_desc_t md;
            DLCD_CHECK(dnnl_memory_get_memory_desc(p->state[i].scratchpad, &md), "dnnl_memory_get_memory_desc");
            if (dnnl_memory_desc_get_size(md) > most) most = dnnl_memory_desc_get_size(md);
        }
    }
    if (most) {  /* primitives run one at a time: they share the largest scratchpad */
        if (!(*p->scratch = malloc(most))) return 1;
        for (int i = 0; i < p->nops; i++)
            if (p->state[i].scratchpad)
                DLCD_CHECK(dnnl_memory_set_data_handle(p->state[i].scratchpad, *p->scratch),
                           "dnnl_memory_set_data_handle");
    }
    free(blocks);  /* the blocks themselves stay: p->buffers points into them */
    free(block_of);
    return 0;
}

static int dlcd_run_op(const dlcd_partition *p, dnnl_stream_t stream, int i, void **args, void **outs) {
    dlcd_op_state *st = &p->state[i];
    dnnl_exec_arg_t a[DLCD_MAX_IN + 2];
    int n = 0;
    for (int k = 0; k < st->nin; k++) {
        dlcd_input *in = &st->in[k];
        if (!in->once) {
            DLCD_CHECK(dnnl_memory_set_data_handle(in->user, dlcd_handle(p, in->value, args, outs)),
                       "dnnl_memory_set_data_handle");
            if (in->reorder && dlcd_reorder(p, stream, in->reorder, in->reorder_pad, in->user, in->mem)) return 1;
        }
        a[n].arg = in->arg;
        a[n++].memory = in->mem;
    }
    if (st->dst_user)
        DLCD_CHECK(dnnl_memory_set_data_handle(st->dst_user, dlcd_handle(p, st->dst_value, args, outs)),
                   "dnnl_memory_set_data_handle");
    a[n].arg = DNNL_ARG_DST;
    a[n++].memory = st->dst_mem;
    if (st->scratchpad) {
        a[n].arg = DNNL_ARG_SCRATCHPAD;
        a[n++].memory = st->scratchpad;
    }
    if (dlcd_exec(p, stream, st->prim, n, a)) return 1;
    if (st->dst_reorder && dlcd_reorder(p, stream, st->dst_reorder, st->dst_reorder_pad, st->dst_mem, st->dst_user)) return 1;
    return 0;
}

static int32_t dlcd_call(const dlcd_partition *p, void **args, void **outs) {
    dnnl_status_t s;
    dnnl_engine_t eng = dlc_dnnl_engine(&s);
    if (s != dnnl_success) {
        static int said;
        if (!said++) dlcd_report(p, "dnnl_engine_create(dnnl_cpu)", s);
        return 1;
    }
    dnnl_stream_t stream = dlc_dnnl_stream(eng, &s);
    if (s != dnnl_success) {
        dlcd_report(p, "dnnl_stream_create", s);
        return 1;
    }
    pthread_mutex_lock(p->mutex);
    int rc = 0;
    if (*p->ready == 0) *p->ready = dlcd_build(p, eng, stream, args) ? -1 : 1;
    if (*p->ready < 0) rc = 1;
    for (int i = 0; !rc && i < p->nops; i++) rc = dlcd_run_op(p, stream, i, args, outs);
    if (!rc && dnnl_stream_wait(stream) != dnnl_success) rc = 1;
    pthread_mutex_unlock(p->mutex);
    return rc;
}
