/* Convolution forward and backward (data, weights + bias) through oneDNN's C API (dnnl.h), float32, and bfloat16 /
   float16 where the CPU has an optimised implementation (AVX-512 BF16, AMX, AVX-512 FP16): PyTorch's CPU autocast
   runs its half convolutions on the same primitives.

   The caller's buffers are dense in PyTorch's layouts. Each problem (kind + ccc_dnnl_conv + the thread count) gets
   a cache entry made once: the primitive, created over format_tag_any so oneDNN picks its fastest (blocked) layouts,
   and per argument a memory over the caller's buffer plus, where the layouts differ, a memory in oneDNN's layout and
   the reorder between them. A call sets the buffers' handles, reorders the inputs in, runs the primitive and
   reorders the outputs back. One mutex serialises the calls (cffi releases the GIL; the cache and the primitives'
   scratchpads are shared). */
#include <dnnl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

static const dnnl_data_type_t DATA_TYPES[3] = {dnnl_f32, dnnl_bf16, dnnl_f16}; /* by ccc_dnnl_conv.dtype */

int omp_get_max_threads(void); /* libgomp's (oneDNN's GNU OpenMP build and cpu_c share it) */

enum { FWD, BWD_DATA, BWD_WEIGHTS, MATMUL };
#define MAX_ARGS 5
#define MAX_ENTRIES 256 /* the cache is emptied when it holds this many problems */
#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        dnnl_status_t status_ = (call);                                                                                \
        if (status_ != dnnl_success) return status_;                                                                   \
    } while (0)

typedef struct {
    ccc_dnnl_gemm problem;
    long long batch, sa, sb; /* products in one primitive (1: one per call) and their operands' batch strides */
} gemm_key;

typedef struct {
    int arg, output;          /* DNNL_ARG_* of the primitive; whether oneDNN writes it */
    dnnl_memory_t user;       /* over the caller's buffer (its handle is set per call) */
    dnnl_memory_t inner;      /* in the primitive's layout; NULL when the caller's layout is the primitive's */
    dnnl_primitive_t reorder; /* user -> inner for inputs, inner -> user for outputs */
} arg_t;

typedef struct entry {
    int kind, threads; /* oneDNN sizes a primitive's work split for the thread count it is created under */
    dnnl_status_t declined; /* nonzero: a problem oneDNN cannot (or should not) run, remembered so that the
                               caller's fallback does not pay for a primitive descriptor on every call */
    union {
        ccc_dnnl_conv conv; /* FWD, BWD_DATA, BWD_WEIGHTS */
        gemm_key gemm;      /* MATMUL */
    } key;                  /* compared bytewise: zeroed before it is filled */
    dnnl_primitive_t prim;
    int nargs;
    arg_t args[MAX_ARGS];
    struct entry* next;
} entry_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t engine;
static dnnl_stream_t stream;
static entry_t* cache;
static int cache_len;

static void destroy(entry_t* e) {
    for (int i = 0; i < e->nargs; ++i) {
        if (e->args[i].reorder) dnnl_primitive_destroy(e->args[i].reorder);
        if (e->args[i].inner) dnnl_memory_destroy(e->args[i].inner);
        if (e->args[i].user) dnnl_memory_destroy(e->args[i].user);
    }
    if (e->prim) dnnl_primitive_destroy(e->prim);
    free(e);
}

static void clear(void) {
    while (cache) {
        entry_t* next = cache->next;
        destroy(cache);
        cache = next;
    }
    cache_len = 0;
}

/* A memory descriptor of dense row-major `type` (the caller's layout), or format_tag_any (oneDNN's choice). */
static dnnl_status_t make_md(dnnl_memory_desc_t* md, int ndims, const dnnl_dims_t dims, int any,
                             dnnl_data_type_t type) {
    if (any) return dnnl_memory_desc_create_with_tag(md, ndims, dims, type, dnnl_format_tag_any);
    dnnl_dims_t strides;
    dnnl_dim_t s = 1;
    for (int i = ndims - 1; i >= 0; --i) {
        strides[i] = s;
        s *= dims[i];
    }
    return dnnl_memory_desc_create_with_strides(md, ndims, dims, type, strides);
}

/* The descriptors of src, weights, bias, dst (layout any, or the caller's); bias is NULL without one. */
static dnnl_status_t make_mds(const ccc_dnnl_conv* p, int any, dnnl_memory_desc_t md[4]) {
    int nd = (int)p->nd, grouped = p->groups > 1;
    dnnl_dims_t src = {p->batch, p->channels}, dst = {p->batch, p->out_channels}, bias = {p->out_channels}, w;
    int wd = 0;
    if (grouped) w[wd++] = p->groups;
    w[wd++] = p->out_channels / p->groups;
    w[wd++] = p->channels / p->groups;
    for (int i = 0; i < nd; ++i) {
        src[2 + i] = p->in[i];
        dst[2 + i] = p->out[i];
        w[wd + i] = p->kernel[i];
    }
    dnnl_data_type_t type = DATA_TYPES[p->dtype];
    CHECK(make_md(&md[0], nd + 2, src, any, type));
    CHECK(make_md(&md[1], wd + nd, w, any, type));
    if (p->has_bias) CHECK(make_md(&md[2], 1, bias, any, type));
    return make_md(&md[3], nd + 2, dst, any, type);
}

static void free_mds(dnnl_memory_desc_t md[4]) {
    for (int i = 0; i < 4; ++i)
        if (md[i]) dnnl_memory_desc_destroy(md[i]);
}

/* strides, dilations (oneDNN counts them from 0), left and right padding; the right padding makes oneDNN's output
   size PyTorch's (floor division drops the rows a stride does not reach). */
typedef struct {
    dnnl_dims_t strides, dilates, pad_l, pad_r;
} geometry_t;

static void geometry(const ccc_dnnl_conv* p, geometry_t* g) {
    for (int i = 0; i < p->nd; ++i) {
        g->strides[i] = p->stride[i];
        g->dilates[i] = p->dilation[i] - 1;
        g->pad_l[i] = p->pad[i];
        g->pad_r[i] = (p->out[i] - 1) * p->stride[i] + (p->kernel[i] - 1) * p->dilation[i] + 1 - p->in[i] - p->pad[i];
    }
}

/* Appends the primitive's argument `arg` (its descriptor: query `what`, index `index`) over a caller's buffer of
   descriptor `user_md`, with a reorder when the primitive's layout differs. */
static dnnl_status_t add_arg(entry_t* e, const_dnnl_primitive_desc_t pd, int arg, dnnl_query_t what, int index,
                             const_dnnl_memory_desc_t user_md, int output) {
    arg_t* a = &e->args[e->nargs++];
    a->arg = arg;
    a->output = output;
    const_dnnl_memory_desc_t inner_md = dnnl_primitive_desc_query_md(pd, what, index);
    CHECK(dnnl_memory_create(&a->user, user_md, engine, DNNL_MEMORY_NONE));
    if (dnnl_memory_desc_equal(user_md, inner_md)) return dnnl_success;
    CHECK(dnnl_memory_create(&a->inner, inner_md, engine, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_desc_t rpd;
    CHECK(output ? dnnl_reorder_primitive_desc_create(&rpd, inner_md, engine, user_md, engine, NULL)
                 : dnnl_reorder_primitive_desc_create(&rpd, user_md, engine, inner_md, engine, NULL));
    dnnl_status_t status = dnnl_primitive_create(&a->reorder, rpd);
    dnnl_primitive_desc_destroy(rpd);
    return status;
}

/* dnnl_unimplemented where oneDNN would run pd on its reference kernels: for half types far slower than cpu_c's own
   paths (which widen to float32 and use OpenBLAS). */
static dnnl_status_t optimised(const_dnnl_primitive_desc_t pd) {
    const char* impl = NULL;
    CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
    return !impl || strstr(impl, "ref") ? dnnl_unimplemented : dnnl_success;
}

/* *attr: NULL for no post-op, else attributes whose post-ops add the tensor of `residual` (a memory descriptor, or
   NULL for none; the primitive's argument DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1) and then apply the
   activation (ccc_dnnl_conv.activation's codes). */
static dnnl_status_t post_ops_attr(long long activation, const_dnnl_memory_desc_t residual,
                                   dnnl_primitive_attr_t* attr) {
    static const dnnl_alg_kind_t algs[6] = {dnnl_alg_kind_undef, dnnl_eltwise_relu, dnnl_eltwise_logistic,
                                            dnnl_eltwise_tanh, dnnl_eltwise_gelu_erf, dnnl_eltwise_gelu_tanh};
    *attr = NULL;
    if (activation == 0 && !residual) return dnnl_success;
    if (activation < 0 || activation > 5) return dnnl_invalid_arguments;
    dnnl_post_ops_t ops;
    CHECK(dnnl_post_ops_create(&ops));
    dnnl_status_t status = dnnl_success;
    if (residual) status = dnnl_post_ops_append_binary(ops, dnnl_binary_add, residual);
    if (status == dnnl_success && activation) status = dnnl_post_ops_append_eltwise(ops, algs[activation], 0.f, 0.f);
    if (status == dnnl_success) status = dnnl_primitive_attr_create(attr);
    if (status == dnnl_success) status = dnnl_primitive_attr_set_post_ops(*attr, ops);
    dnnl_post_ops_destroy(ops);
    return status;
}

/* The primitive and arguments of entry e (its kind and key set); the argument order is the call's pointer order. */
static dnnl_status_t build_pds(entry_t* e, dnnl_memory_desc_t user[4], dnnl_memory_desc_t any[4],
                               dnnl_primitive_desc_t* hint, dnnl_primitive_desc_t* pd) {
    const ccc_dnnl_conv* p = &e->key.conv;
    geometry_t g;
    geometry(p, &g);
    const dnnl_alg_kind_t alg = dnnl_convolution_direct;
    CHECK(make_mds(p, 0, user));
    CHECK(make_mds(p, 1, any));
    if (e->kind != FWD && (p->activation || p->has_residual))
        return dnnl_invalid_arguments; /* post-ops are the forward's alone */
    dnnl_primitive_attr_t attr;
    CHECK(post_ops_attr(p->activation, p->has_residual ? any[3] : NULL, &attr));
    dnnl_status_t made = dnnl_convolution_forward_primitive_desc_create(
        hint, engine, dnnl_forward_training, alg, any[0], any[1], any[2], any[3], g.strides, g.dilates, g.pad_l,
        g.pad_r, attr);
    if (attr) dnnl_primitive_attr_destroy(attr);
    CHECK(made);
    if (e->kind == BWD_DATA)
        CHECK(dnnl_convolution_backward_data_primitive_desc_create(pd, engine, alg, any[0], any[1], any[3], g.strides,
                                                                   g.dilates, g.pad_l, g.pad_r, *hint, NULL));
    else if (e->kind == BWD_WEIGHTS)
        CHECK(dnnl_convolution_backward_weights_primitive_desc_create(pd, engine, alg, any[0], any[1], any[2], any[3],
                                                                      g.strides, g.dilates, g.pad_l, g.pad_r, *hint,
                                                                      NULL));
    else {
        *pd = *hint;
        *hint = NULL;
    }
    if (p->dtype != 0) CHECK(optimised(*pd));
    CHECK(dnnl_primitive_create(&e->prim, *pd));
    if (e->kind == FWD) {
        CHECK(add_arg(e, *pd, DNNL_ARG_SRC, dnnl_query_src_md, 0, user[0], 0));
        CHECK(add_arg(e, *pd, DNNL_ARG_WEIGHTS, dnnl_query_weights_md, 0, user[1], 0));
        if (p->has_bias) CHECK(add_arg(e, *pd, DNNL_ARG_BIAS, dnnl_query_weights_md, 1, user[2], 0));
        CHECK(add_arg(e, *pd, DNNL_ARG_DST, dnnl_query_dst_md, 0, user[3], 1));
        const int residual = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1; /* the binary post-op's operand */
        return p->has_residual ? add_arg(e, *pd, residual, dnnl_query_exec_arg_md, residual, user[3], 0)
                               : dnnl_success;
    }
    if (e->kind == BWD_DATA) {
        CHECK(add_arg(e, *pd, DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, 0, user[3], 0));
        CHECK(add_arg(e, *pd, DNNL_ARG_WEIGHTS, dnnl_query_weights_md, 0, user[1], 0));
        return add_arg(e, *pd, DNNL_ARG_DIFF_SRC, dnnl_query_diff_src_md, 0, user[0], 1);
    }
    CHECK(add_arg(e, *pd, DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, 0, user[3], 0));
    CHECK(add_arg(e, *pd, DNNL_ARG_SRC, dnnl_query_src_md, 0, user[0], 0));
    CHECK(add_arg(e, *pd, DNNL_ARG_DIFF_WEIGHTS, dnnl_query_diff_weights_md, 0, user[1], 1));
    if (p->has_bias) CHECK(add_arg(e, *pd, DNNL_ARG_DIFF_BIAS, dnnl_query_diff_weights_md, 1, user[2], 1));
    return dnnl_success;
}

/* A matmul operand: `batch` matrices (`nd` 3) `batch_stride` apart, or one (`nd` 2), of rows x cols with row
   stride s0 and column stride s1 (the caller's layout, used as is). */
static dnnl_status_t operand_md(dnnl_memory_desc_t* md, int nd, long long batch, long long batch_stride,
                                long long rows, long long cols, long long s0, long long s1, dnnl_data_type_t type) {
    dnnl_dims_t dims = {batch, rows, cols}, strides = {batch_stride, s0, s1};
    if (nd == 2) {
        dims[0] = rows, dims[1] = cols, strides[0] = s0, strides[1] = s1;
    }
    return dnnl_memory_desc_create_with_strides(md, nd, dims, type, strides);
}

/* The matmul primitive of entry e over the caller's strided operands (no reorders: transposes are strides): one
   product, or key.batch products as one 3-D primitive whose operands are sa / sb elements apart (0: one matrix
   for every product, broadcast); the bias, when there is one, is added to every row, then the residual and the
   activation, when there are, as post-ops. */
static dnnl_status_t build_matmul(entry_t* e) {
    const gemm_key* key = &e->key.gemm;
    const ccc_dnnl_gemm* p = &key->problem;
    const dnnl_data_type_t type = DATA_TYPES[p->dtype];
    const int nd = key->batch > 1 ? 3 : 2;
    const long long z = key->batch, n = p->n, m = p->m, k = p->k;
    dnnl_memory_desc_t md[5] = {0}; /* src, weights, bias, dst, residual (laid out as dst) */
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t status =
        operand_md(&md[0], nd, key->sa ? z : 1, key->sa ? key->sa : n * k, n, k, p->ta ? 1 : p->lda, p->ta ? p->lda : 1,
                   type);
    if (status == dnnl_success)
        status = operand_md(&md[1], nd, key->sb ? z : 1, key->sb ? key->sb : k * m, k, m, p->tb ? 1 : p->ldb,
                            p->tb ? p->ldb : 1, type);
    if (status == dnnl_success && p->has_bias) status = operand_md(&md[2], nd, 1, m, 1, m, m, 1, type);
    if (status == dnnl_success) status = operand_md(&md[3], nd, z, n * m, n, m, m, 1, type);
    if (status == dnnl_success && p->has_residual) status = operand_md(&md[4], nd, z, n * m, n, m, m, 1, type);
    dnnl_primitive_attr_t attr = NULL;
    if (status == dnnl_success) status = post_ops_attr(p->activation, md[4], &attr);
    if (status == dnnl_success)
        status = dnnl_matmul_primitive_desc_create(&pd, engine, md[0], md[1], md[2], md[3], attr);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (status == dnnl_success) status = optimised(pd);
    if (status == dnnl_success) status = dnnl_primitive_create(&e->prim, pd);
    const int args[5] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST,
                         DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1};
    for (int i = 0; i < 5 && status == dnnl_success; ++i) {
        if (!md[i]) continue; /* no bias */
        arg_t* a = &e->args[e->nargs++];
        a->arg = args[i];
        a->output = i == 3;
        status = dnnl_memory_create(&a->user, md[i], engine, DNNL_MEMORY_NONE);
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    for (int i = 0; i < 5; ++i)
        if (md[i]) dnnl_memory_desc_destroy(md[i]);
    return status;
}

static dnnl_status_t build(entry_t* e) {
    if (e->kind == MATMUL) return build_matmul(e);
    dnnl_memory_desc_t user[4] = {0}, any[4] = {0};
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    dnnl_status_t status = build_pds(e, user, any, &hint, &pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (hint) dnnl_primitive_desc_destroy(hint);
    free_mds(user);
    free_mds(any);
    return status;
}

/* The engine and its stream, made on first use (under lock). */
static dnnl_status_t start(void) {
    if (!engine) CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    if (!stream) CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    return dnnl_success;
}

/* The cached entry of (kind, key of `size` bytes), made on first use; NULL (and *status) when oneDNN cannot run the
   problem. */
static entry_t* find(int kind, const void* key, size_t size, dnnl_status_t* status) {
    int threads = omp_get_max_threads();
    for (entry_t* e = cache; e; e = e->next)
        if (e->kind == kind && e->threads == threads && !memcmp(&e->key, key, size)) {
            *status = e->declined;
            return e->declined ? NULL : e;
        }
    if ((*status = start()) != dnnl_success) return NULL;
    if (cache_len >= MAX_ENTRIES) clear();
    entry_t* e = calloc(1, sizeof *e);
    if (!e) {
        *status = dnnl_out_of_memory;
        return NULL;
    }
    e->kind = kind;
    e->threads = threads;
    memcpy(&e->key, key, size);
    if ((*status = build(e)) != dnnl_success) { /* keep only the verdict */
        entry_t* declined = calloc(1, sizeof *declined);
        if (declined) {
            declined->kind = kind;
            declined->threads = threads;
            declined->declined = *status;
            memcpy(&declined->key, key, size);
        }
        destroy(e);
        e = declined;
    }
    if (e) {
        e->next = cache;
        cache = e;
        ++cache_len;
    }
    return e && !e->declined ? e : NULL;
}

static dnnl_status_t execute(const entry_t* e, void* const* buffers) {
    dnnl_exec_arg_t exec[MAX_ARGS];
    for (int i = 0; i < e->nargs; ++i) {
        const arg_t* a = &e->args[i];
        CHECK(dnnl_memory_set_data_handle(a->user, buffers[i]));
        exec[i].arg = a->arg;
        exec[i].memory = a->inner ? a->inner : a->user;
        if (a->reorder && !a->output) {
            dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, a->user}, {DNNL_ARG_TO, a->inner}};
            CHECK(dnnl_primitive_execute(a->reorder, stream, 2, r));
        }
    }
    CHECK(dnnl_primitive_execute(e->prim, stream, e->nargs, exec));
    for (int i = 0; i < e->nargs; ++i) {
        const arg_t* a = &e->args[i];
        if (a->reorder && a->output) {
            dnnl_exec_arg_t r[2] = {{DNNL_ARG_FROM, a->inner}, {DNNL_ARG_TO, a->user}};
            CHECK(dnnl_primitive_execute(a->reorder, stream, 2, r));
        }
    }
    return dnnl_stream_wait(stream);
}

static int run(int kind, const ccc_dnnl_conv* p, void* const* buffers) {
    if (p->nd < 1 || p->nd > 3 || p->dtype < 0 || p->dtype > 2) return dnnl_invalid_arguments;
    pthread_mutex_lock(&lock);
    dnnl_status_t status = dnnl_success;
    entry_t* e = find(kind, p, sizeof *p, &status);
    if (e) status = execute(e, buffers);
    pthread_mutex_unlock(&lock);
    return (int)status;
}

int ccc_dnnl_conv_forward(const ccc_dnnl_conv* p, const void* x, const void* w, const void* bias,
                          const void* residual, void* out) {
    void* buffers[5]; /* in the entry's argument order: src, weights, [bias], dst, [residual] */
    int used = 0;
    buffers[used++] = (void*)x;
    buffers[used++] = (void*)w;
    if (p->has_bias) buffers[used++] = (void*)bias;
    buffers[used++] = out;
    if (p->has_residual) buffers[used++] = (void*)residual;
    return run(FWD, p, buffers);
}

int ccc_dnnl_conv_backward_data(const ccc_dnnl_conv* p, const void* grad_out, const void* w, void* grad_x) {
    void* const buffers[3] = {(void*)grad_out, (void*)w, grad_x};
    return run(BWD_DATA, p, buffers);
}

int ccc_dnnl_conv_backward_weights(const ccc_dnnl_conv* p, const void* grad_out, const void* x, void* grad_w,
                                   void* grad_b) {
    void* const buffers[4] = {(void*)grad_out, (void*)x, grad_w, grad_b};
    return run(BWD_WEIGHTS, p, buffers);
}

/* Whether the count offsets are one stride apart (*stride, 0 for a single matrix used count times). */
static int evenly_spaced(const long long* offs, long long count, long long* stride) {
    *stride = offs[1] - offs[0];
    if (*stride < 0) return 0;
    for (long long i = 2; i < count; ++i)
        if (offs[i] - offs[i - 1] != *stride) return 0;
    return 1;
}

int ccc_dnnl_matmul(const ccc_dnnl_gemm* p, long long count, const void* a, const long long* a_offs, const void* b,
                    const long long* b_offs, const void* bias, const void* residual, void* c) {
    if (p->dtype < 0 || p->dtype > 2 || count < 1) return dnnl_invalid_arguments;
    const long long size = p->dtype ? 2 : 4, nm = p->n * p->m; /* bytes per element; elements per product */
    gemm_key key;
    memset(&key, 0, sizeof key); /* compared bytewise */
    key.problem = *p;
    key.batch = 1;
    if (count > 1 && evenly_spaced(a_offs, count, &key.sa) && evenly_spaced(b_offs, count, &key.sb))
        key.batch = count; /* one primitive over every product */
    else
        key.sa = key.sb = 0;
    pthread_mutex_lock(&lock);
    dnnl_status_t status = dnnl_success;
    entry_t* e = find(MATMUL, &key, sizeof key, &status);
    const long long calls = key.batch > 1 ? 1 : count;
    for (long long i = 0; e && status == dnnl_success && i < calls; ++i) {
        void* buffers[MAX_ARGS]; /* in the entry's argument order: src, weights, [bias], dst, [residual] */
        int used = 0;
        buffers[used++] = (char*)a + a_offs[i] * size;
        buffers[used++] = (char*)b + b_offs[i] * size;
        if (p->has_bias) buffers[used++] = (void*)bias;
        buffers[used++] = (char*)c + i * nm * size;
        if (p->has_residual) buffers[used++] = (char*)residual + i * nm * size;
        status = execute(e, buffers);
    }
    pthread_mutex_unlock(&lock);
    return (int)status;
}

int ccc_dnnl_matmul_impl(long long n, long long m, long long k, char* out, int size) {
    if (size < 1) return dnnl_invalid_arguments;
    out[0] = 0;
    pthread_mutex_lock(&lock);
    dnnl_status_t status = start();
    dnnl_memory_desc_t md[3] = {0};
    dnnl_primitive_desc_t pd = NULL;
    if (status == dnnl_success) status = operand_md(&md[0], 2, 1, n * k, n, k, k, 1, dnnl_f32);
    if (status == dnnl_success) status = operand_md(&md[1], 2, 1, k * m, k, m, m, 1, dnnl_f32);
    if (status == dnnl_success) status = operand_md(&md[2], 2, 1, n * m, n, m, m, 1, dnnl_f32);
    if (status == dnnl_success)
        status = dnnl_matmul_primitive_desc_create(&pd, engine, md[0], md[1], NULL, md[2], NULL);
    const char* impl = NULL;
    if (status == dnnl_success) status = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    if (status == dnnl_success && impl) {
        strncpy(out, impl, (size_t)size - 1);
        out[size - 1] = 0;
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    for (int i = 0; i < 3; ++i)
        if (md[i]) dnnl_memory_desc_destroy(md[i]);
    pthread_mutex_unlock(&lock);
    return (int)status;
}

int ccc_dnnl_cache_size(void) {
    pthread_mutex_lock(&lock);
    int n = cache_len;
    pthread_mutex_unlock(&lock);
    return n;
}

void ccc_dnnl_cache_clear(void) {
    pthread_mutex_lock(&lock);
    clear();
    pthread_mutex_unlock(&lock);
}

int ccc_dnnl_version(void) {
    const dnnl_version_t* v = dnnl_version();
    return v->major * 10000 + v->minor * 100 + v->patch;
}
