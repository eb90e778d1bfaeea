// verbose_probe.cpp - tiny oneDNN workload whose only purpose is to make the
// library print verbose lines (DNNL_VERBOSE=2 / ONEDNN_VERBOSE=2) for a
// handful of common primitives.  Written for dnnlens' legacy sample logs;
// builds against oneDNN 2.0 ... 3.x (see make_legacy_logs.sh).
//
// Per iteration it executes:
//   reorder nchw -> conv layout, convolution fwd (+bias, post-op relu),
//   reorder back to nchw, eltwise tanh, batch normalization, pooling (max),
//   inner product, matmul, binary add (per-channel broadcast), sum,
//   convolution backward-data, int8 convolution (s8 src with zero point and
//   a scale: weight compensation shows up in the md flags).
// The eltwise primitive is re-created every iteration so the log also shows
// create:cache_hit lines (oneDNN >= 1.2 has a primitive cache).

#include <cstdio>
#include <unordered_map>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;
using args_t = std::unordered_map<int, memory>;

#if DNNL_VERSION_MAJOR >= 3
#define V3 1
#else
#define V3 0
#endif

static engine eng(engine::kind::cpu, 0);
static stream strm(eng);

// Memory with a deterministic, non-trivial fill (plain layouts only).
static memory filled(const memory::desc &md, float seed) {
    memory m(md, eng);
    float *p = static_cast<float *>(m.get_data_handle());
    size_t n = md.get_size() / sizeof(float);
    for (size_t i = 0; i < n; ++i)
        p[i] = seed * (float)((i * 7 + 3) % 13) - 0.5f * seed * 6.f;
    return m;
}

// Returns `m` if it already has layout `want`, otherwise a reordered copy.
static memory as_layout(const memory &m, const memory::desc &want) {
    if (m.get_desc() == want) return m;
    memory out(want, eng);
    reorder(m, out).execute(strm, {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, out}});
    return out;
}

static void run(primitive p, const args_t &args) {
    p.execute(strm, args);
    strm.wait();
}

int main() {
    const memory::dim N = 2, IC = 8, OC = 16, H = 14, W = 14, K = 3;
    const memory::dims strides = {1, 1}, pad = {1, 1};

    const auto v = version();
    std::printf("verbose_probe: running with oneDNN %d.%d.%d\n", v->major,
            v->minor, v->patch);
    std::fflush(stdout);

    // ---- user (plain) tensors
    memory::desc src_nchw({N, IC, H, W}, dt::f32, tag::nchw);
    memory::desc wei_oihw({OC, IC, K, K}, dt::f32, tag::oihw);
    memory::desc bia_x({OC}, dt::f32, tag::x);
    memory::desc dst_nchw({N, OC, H, W}, dt::f32, tag::nchw);
    memory user_src = filled(src_nchw, 0.25f);
    memory user_wei = filled(wei_oihw, 0.05f);
    memory user_bia = filled(bia_x, 0.1f);

    // ---- convolution forward with relu post-op, layouts chosen by oneDNN
    memory::desc src_any({N, IC, H, W}, dt::f32, tag::any);
    memory::desc wei_any({OC, IC, K, K}, dt::f32, tag::any);
    memory::desc dst_any({N, OC, H, W}, dt::f32, tag::any);
    post_ops ops;
#if V3
    ops.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f);
#else
    ops.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
#endif
    primitive_attr conv_attr;
    conv_attr.set_post_ops(ops);
#if V3
    convolution_forward::primitive_desc conv_pd(eng, prop_kind::forward_training,
            algorithm::convolution_direct, src_any, wei_any, bia_x, dst_any,
            strides, pad, pad, conv_attr);
#else
    convolution_forward::primitive_desc conv_pd(
            convolution_forward::desc(prop_kind::forward_training,
                    algorithm::convolution_direct, src_any, wei_any, bia_x,
                    dst_any, strides, pad, pad),
            conv_attr, eng);
#endif
    convolution_forward conv(conv_pd);
    memory conv_dst(conv_pd.dst_desc(), eng);
    memory conv_dst_nchw(dst_nchw, eng);

    // ---- convolution backward data (diff_dst -> diff_src)
#if V3
    convolution_backward_data::primitive_desc bwd_pd(eng,
            algorithm::convolution_direct, src_any, wei_any, dst_any, strides,
            pad, pad, conv_pd);
#else
    convolution_backward_data::primitive_desc bwd_pd(
            convolution_backward_data::desc(algorithm::convolution_direct,
                    src_any, wei_any, dst_any, strides, pad, pad),
            eng, conv_pd);
#endif
    convolution_backward_data conv_bwd(bwd_pd);
    memory diff_src(bwd_pd.diff_src_desc(), eng);

    // ---- batch normalization (scale + shift) on the conv output
    const memory::desc act_md = conv_pd.dst_desc();
#if V3
    batch_normalization_forward::primitive_desc bn_pd(eng,
            prop_kind::forward_training, act_md, act_md, 1e-5f,
            normalization_flags::use_scale | normalization_flags::use_shift);
    memory bn_scale = filled(memory::desc({OC}, dt::f32, tag::x), 0.2f);
    memory bn_shift = filled(memory::desc({OC}, dt::f32, tag::x), 0.1f);
#else
    batch_normalization_forward::primitive_desc bn_pd(
            batch_normalization_forward::desc(prop_kind::forward_training,
                    act_md, 1e-5f, normalization_flags::use_scale_shift),
            eng);
    memory bn_ss = filled(bn_pd.weights_desc(), 0.2f); // 2 x OC
#endif
    batch_normalization_forward bn(bn_pd);
    memory bn_dst(bn_pd.dst_desc(), eng);
    memory bn_mean(bn_pd.mean_desc(), eng), bn_var(bn_pd.variance_desc(), eng);

    // ---- max pooling 2x2 / 2
    memory::desc pool_dst_any({N, OC, H / 2, W / 2}, dt::f32, tag::any);
#if V3
    pooling_forward::primitive_desc pool_pd(eng, prop_kind::forward_inference,
            algorithm::pooling_max, act_md, pool_dst_any, {2, 2}, {2, 2},
            {0, 0}, {0, 0}, {0, 0});
#else
    pooling_forward::primitive_desc pool_pd(
            pooling_forward::desc(prop_kind::forward_inference,
                    algorithm::pooling_max, act_md, pool_dst_any, {2, 2},
                    {2, 2}, {0, 0}, {0, 0}),
            eng);
#endif
    pooling_forward pool(pool_pd);
    memory pool_dst(pool_pd.dst_desc(), eng);

    // ---- inner product on the pooled activations (10 outputs)
    const memory::dim IPO = 10;
    memory::desc ip_wei_any({IPO, OC, H / 2, W / 2}, dt::f32, tag::any);
    memory::desc ip_bia({IPO}, dt::f32, tag::x);
    memory::desc ip_dst({N, IPO}, dt::f32, tag::nc);
#if V3
    inner_product_forward::primitive_desc ip_pd(eng,
            prop_kind::forward_inference, pool_pd.dst_desc(), ip_wei_any,
            ip_bia, ip_dst);
#else
    inner_product_forward::primitive_desc ip_pd(
            inner_product_forward::desc(prop_kind::forward_inference,
                    pool_pd.dst_desc(), ip_wei_any, ip_bia, ip_dst),
            eng);
#endif
    inner_product_forward ip(ip_pd);
    memory ip_wei_user = filled(
            memory::desc({IPO, OC, H / 2, W / 2}, dt::f32, tag::oihw), 0.01f);
    memory ip_b = filled(ip_bia, 0.1f), ip_out(ip_dst, eng);

    // ---- plain 2D matmul 32x64 * 64x48
    memory::desc a_md({32, 64}, dt::f32, tag::ab);
    memory::desc b_md({64, 48}, dt::f32, tag::ab);
    memory::desc c_md({32, 48}, dt::f32, tag::ab);
#if V3
    matmul::primitive_desc mm_pd(eng, a_md, b_md, c_md);
#else
    matmul::primitive_desc mm_pd(matmul::desc(a_md, b_md, c_md), eng);
#endif
    matmul mm(mm_pd);
    memory mm_a = filled(a_md, 0.3f), mm_b = filled(b_md, 0.2f);
    memory mm_c(c_md, eng);

    // ---- binary add with a per-channel (1xOCx1x1) broadcast operand
    memory::desc chan_md({1, OC, 1, 1}, dt::f32, tag::nchw);
#if V3
    binary::primitive_desc add_pd(
            eng, algorithm::binary_add, dst_nchw, chan_md, dst_nchw);
#else
    binary::primitive_desc add_pd(
            binary::desc(algorithm::binary_add, dst_nchw, chan_md, dst_nchw),
            eng);
#endif
    binary add(add_pd);
    memory chan = filled(chan_md, 0.5f), add_dst(dst_nchw, eng);

    // ---- sum of two plain tensors: 1.0 * a + 0.5 * b
#if V3
    sum::primitive_desc sum_pd(eng, {1.f, 0.5f}, {dst_nchw, dst_nchw});
#else
    sum::primitive_desc sum_pd({1.f, 0.5f}, {dst_nchw, dst_nchw}, eng);
#endif
    sum summ(sum_pd);
    memory sum_dst(sum_pd.dst_desc(), eng);

    // ---- int8 convolution: s8 src (+ runtime src zero point), s8 weights,
    // f32 dst with a common scale.  s8 src makes the weights reorder add
    // s8s8 (and zero-point) compensation, visible as memory-desc flags.
    // Optional: skipped with a message if this build/CPU has no such impl.
    primitive q_conv;
    args_t q_args;
    try {
        memory::desc q_src_any({N, IC, H, W}, dt::s8, tag::any);
        memory::desc q_wei_any({OC, IC, K, K}, dt::s8, tag::any);
        memory::desc q_dst_any({N, OC, H, W}, dt::f32, tag::any);
        memory::desc no_bias;
        primitive_attr q_attr;
#if V3
        q_attr.set_scales_mask(DNNL_ARG_WEIGHTS, 0);
        q_attr.set_zero_points_mask(DNNL_ARG_SRC, 0);
        convolution_forward::primitive_desc q_pd(eng,
                prop_kind::forward_inference, algorithm::convolution_direct,
                q_src_any, q_wei_any, no_bias, q_dst_any, strides, pad, pad,
                q_attr);
#else
        q_attr.set_output_scales(0, {0.5f});
        q_attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
        convolution_forward::primitive_desc q_pd(
                convolution_forward::desc(prop_kind::forward_inference,
                        algorithm::convolution_direct, q_src_any, q_wei_any,
                        no_bias, q_dst_any, strides, pad, pad),
                q_attr, eng);
#endif
        q_conv = convolution_forward(q_pd);
        memory zp_src = filled(memory::desc({1}, dt::s32, tag::x), 0.f);
        static_cast<int *>(zp_src.get_data_handle())[0] = 2;
        q_args = {{DNNL_ARG_SRC, as_layout(user_src, q_pd.src_desc())},
                {DNNL_ARG_WEIGHTS, as_layout(user_wei, q_pd.weights_desc())},
                {DNNL_ARG_DST, memory(q_pd.dst_desc(), eng)},
                {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_src}};
#if V3
        q_args.insert({DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS,
                filled(memory::desc({1}, dt::f32, tag::x), 0.1f)});
#endif
    } catch (const dnnl::error &e) {
        std::printf("verbose_probe: int8 convolution skipped: %s\n", e.what());
        std::fflush(stdout);
    }

    const int iterations = 3;
    for (int it = 0; it < iterations; ++it) {
        // reorders into the layouts the convolution asked for
        memory src = as_layout(user_src, conv_pd.src_desc());
        memory wei = as_layout(user_wei, conv_pd.weights_desc());
        run(conv, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei},
                          {DNNL_ARG_BIAS, user_bia}, {DNNL_ARG_DST, conv_dst}});
        run(reorder(conv_dst, conv_dst_nchw),
                {{DNNL_ARG_FROM, conv_dst}, {DNNL_ARG_TO, conv_dst_nchw}});

        // eltwise, re-created each time (cache miss, then cache hits)
#if V3
        eltwise_forward::primitive_desc elt_pd(eng,
                prop_kind::forward_inference, algorithm::eltwise_tanh,
                dst_nchw, dst_nchw, 0.f, 0.f);
#else
        eltwise_forward::primitive_desc elt_pd(
                eltwise_forward::desc(prop_kind::forward_inference,
                        algorithm::eltwise_tanh, dst_nchw, 0.f, 0.f),
                eng);
#endif
        memory elt_dst(dst_nchw, eng);
        run(eltwise_forward(elt_pd),
                {{DNNL_ARG_SRC, conv_dst_nchw}, {DNNL_ARG_DST, elt_dst}});

#if V3
        run(bn, {{DNNL_ARG_SRC, conv_dst}, {DNNL_ARG_DST, bn_dst},
                        {DNNL_ARG_SCALE, bn_scale}, {DNNL_ARG_SHIFT, bn_shift},
                        {DNNL_ARG_MEAN, bn_mean},
                        {DNNL_ARG_VARIANCE, bn_var}});
#else
        run(bn, {{DNNL_ARG_SRC, conv_dst}, {DNNL_ARG_DST, bn_dst},
                        {DNNL_ARG_SCALE_SHIFT, bn_ss}, {DNNL_ARG_MEAN, bn_mean},
                        {DNNL_ARG_VARIANCE, bn_var}});
#endif
        run(pool, {{DNNL_ARG_SRC, bn_dst}, {DNNL_ARG_DST, pool_dst}});

        memory ip_w = as_layout(ip_wei_user, ip_pd.weights_desc());
        run(ip, {{DNNL_ARG_SRC, pool_dst}, {DNNL_ARG_WEIGHTS, ip_w},
                        {DNNL_ARG_BIAS, ip_b}, {DNNL_ARG_DST, ip_out}});

        run(mm, {{DNNL_ARG_SRC, mm_a}, {DNNL_ARG_WEIGHTS, mm_b},
                        {DNNL_ARG_DST, mm_c}});

        run(add, {{DNNL_ARG_SRC_0, elt_dst}, {DNNL_ARG_SRC_1, chan},
                         {DNNL_ARG_DST, add_dst}});
        run(summ, {{DNNL_ARG_MULTIPLE_SRC + 0, add_dst},
                          {DNNL_ARG_MULTIPLE_SRC + 1, conv_dst_nchw},
                          {DNNL_ARG_DST, sum_dst}});

        // backward data: use the forward output as a stand-in diff_dst
        memory diff_dst = as_layout(conv_dst, bwd_pd.diff_dst_desc());
        memory bwd_wei = as_layout(wei, bwd_pd.weights_desc());
        run(conv_bwd, {{DNNL_ARG_DIFF_DST, diff_dst},
                              {DNNL_ARG_WEIGHTS, bwd_wei},
                              {DNNL_ARG_DIFF_SRC, diff_src}});

        if (q_conv) run(q_conv, q_args);
    }

    std::printf("verbose_probe: %d iterations done\n", iterations);
    return 0;
}
