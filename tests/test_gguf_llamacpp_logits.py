"""pyvt reads each GGUF architecture as llama.cpp does: logits against llama.cpp's own.

tests/data/gguf_logits_llamacpp.json (tools/make_llamacpp_golden.py, llama-cpp-python) holds
the logits llama.cpp computes, in float32 with an f32 KV cache, for tiny GGUF models of every
architecture pyvt reads: the family cases of tests/family_models.py written as llama.cpp's
converter writes gemma / gemma2 / gemma3 / phi3 / smollm3 / granite / olmo2 (OLMo 2, and OLMo 3 with its window) /
ernie4_5 / seed_oss / glm4 / command-r / cohere2 / arcee / exaone4 / exaone / jais2 / hunyuan-dense / olmo / apertus / nemotron / gptneox / gpt2 / starcoder / falcon / bloom / mpt and the mixture-of-experts llama (Mixtral) / qwen2moe /
qwen3moe / granitemoe / olmoe / glm4moe / dots1 / deepseek2 / ernie4_5-moe / minimax-m2 / exaone-moe / hunyuan-moe / afmoe / hy_v3 (test_convert.moe_gguf), lfm2 / lfm2moe (family), and make_tiny_llama's llama / qwen2 / qwen3 models
(bfloat16-exact values, so pyvt's bf16 mode holds the same weights). Each model is rebuilt here
(build_case), converted by pyvt and run on the same sequence.

Measured agreement (2026-11-26, llama-cpp-python 0.3.36; largest difference over the largest
logit): llama, qwen2, qwen3 and phi3 3.6e-7 .. 5.5e-7; Gemma 3 4.1e-5 and 5.2e-5, Gemma 2
1.7e-4 and 6.9e-4 (its soft-caps 3 / 8 magnify) — ggml's CPU GELU reads a table of
float16 inputs (GGML_GELU_FP16 in ggml-cpu/vec.h), where pyvt and transformers compute it in
float32 (pyvt's Gemma logits match transformers' to 3e-7: tests/test_families.py). Phi-3's
sliding window: llama.cpp turns it off at load (its warning: "Phi SWA is currently disabled"),
transformers and pyvt honour it, so phi3-window8 is compared before the window only.
The MoE cases (added 2026-11-28, the same llama-cpp-python): mixtral 6.0e-7, qwen2-moe-shared
5.0e-7, qwen3-moe 5.0e-7, argmax equal at all 60 positions — llama.cpp's routing (softmax,
top-k, renormalized for Mixtral and qwen3moe and not for qwen2moe, the sigmoid-gated shared
expert) is pyvt's. smollm3 (the same day): 3.7e-7, its NoPE layer as llama.cpp's; granite 2.4e-7 (its four
multipliers); olmo2 6.5e-7 (its post-norm block); granitemoe 4.8e-7; olmoe 4.5e-7. gemma (Gemma 1,
the same day): 3.2e-5 (ggml's float16 GELU table again), argmax equal at all 60 positions;
granitemoe-shared (granitemoe with ffn_*_shexp, GraniteMoeShared): 3.1e-7. phi and phi-gqa-04
(phi2: LayerNorm, the parallel block, partial rotary; the same day): 1.9e-4 and 1.6e-4 — its
GELU goes through ggml's float16 table as Gemma's does; argmax equal at all 60 positions.
stablelm (LayerNorms with biases, 4 rotary dims; the same day): 4.9e-7. starcoder2 (LayerNorms, an
ungated GELU MLP): 1.6e-4 (the GELU table again). gpt-oss (the same day;
sinks, the router's bias, the clamped SwiGLU, sliding layers, YaRN): 5.3e-7, argmax equal at all
60 positions — with llama.cpp's YaRN ramp: llama.cpp rounds the correction dims (floor / ceil,
transformers' truncate true) where gpt-oss's configs say truncate false, which the conversion
keeps (the model's own definition); so this test sets truncate true in the converted config.
With the conversion's ramp the logits differ from llama.cpp's by 0.25 of the largest in this
tiny case (head_dim 16, YaRN factor 4 over 64 positions); for gpt-oss-20b's RoPE (head_dim 64,
factor 32 over 4096, base 150000) 9 of its 32 frequencies differ by 0.3-43 %. (Regenerating the file moved the older cases' logits by up to 1.2e-4 of the
largest — llama.cpp's threads sum in another order — so their stored values were kept.)
ernie4_5, seed-oss, glm4 and olmo3 (added 2026-11-29 with `tools/make_llamacpp_golden.py
--logits`, which records only the named cases; the same llama-cpp-python): 3.7e-7, 5.1e-7,
7.5e-7 and 6.1e-7, argmax equal at all 60 positions — ERNIE 4.5's and GLM-4's pair-rotating
RoPE (Q/K in Hugging Face's order in the file, llama.cpp's NORM rope; GLM-4 on the first 8 of
16 dims), GLM-4's sandwich norms and fused gate|up, Seed-OSS's q/k/v biases, and OLMo 3 (an
`olmo2` file with a window and a per-layer pattern): three sliding layers of window 6 rotating
with rope.freq_base unscaled, the global one with linear scaling 4, as llama.cpp's olmo2 graph
computes. The ernie4_5 and seed-oss files hold no o / MLP biases (llama.cpp has no place for
them; test_convert.family_gguf leaves them out of the case).
cohere (llama.cpp's command-r) and cohere2 (added 2026-11-29 with --logits, the same
llama-cpp-python): 4.7e-7 and 4.9e-7, argmax equal at all 60 positions — the bias-free
LayerNorm before the parallel block, Q/K in Hugging Face's pair order (llama.cpp's NORM rope),
logit_scale 0.25 (cohere) / 0.0625 (cohere2), the output tied to token_embd, and Cohere 2's
three sliding layers of window 6 (llama.cpp's default pattern 4: no pattern key, as its
converter writes none) that alone rotate, the global one without RoPE. Broken on purpose the
conversion fails here: Q/K taken as llama-permuted (cohere 0.20, cohere2 0.41), logit_scale
dropped (cohere 0.75: libvt's default 0.0625), the pattern read as dense-first (cohere2 0.48);
in the folder, every layer sliding (0.21) or no window (0.49). The cohere case's biases are left
out (llama.cpp's command-r has no o_proj bias: a file with biases is refused).
arcee, exaone4-nowindow and exaone4-64 (added 2026-11-29 with --logits, the same
llama-cpp-python): 5.6e-7, 3.9e-7 and 1.2e-6, argmax equal at all 60 positions — Arcee's
llama-permuted Q/K and ungated relu² MLP (llama.cpp's LLM_FFN_RELU_SQR), EXAONE 4's post-norm
block with per-head q/k norms, Q/K in Hugging Face's order (NEOX rope). llama.cpp gives EXAONE 4
sliding layers only with 64 blocks (src/models/exaone4.cpp; any other file runs every layer
global and rotating, as exaone4-nowindow is), so exaone4-64 is the exaone4 case's two blocks
repeated to 64 (test_convert.TILED) with its per-layer pattern: 32 sliding layers of window 6
that rotate and 32 global ones without RoPE. Broken on purpose the conversion fails here:
arcee's Q/K left llama-permuted (0.78); exaone4's Q/K taken as llama-permuted (nowindow 0.52,
64 0.53), its two post norms swapped (nowindow 0.35); for exaone4-64 the pattern inverted
(0.65), the pattern key ignored for llama.cpp's default 4 (0.59), every layer sliding so the
NoPE layers rotate (0.87), no window with every layer rotating (0.67). The arcee case's biases
are left out (llama.cpp's arcee has no o_proj or MLP biases: a file with biases is refused);
relu² replaced by silu is refused by libvt ("not supported for Arcee").
apertus (added 2026-11-29 with --logits, the same llama-cpp-python): 3.8e-7, argmax equal at
all 60 positions — Q/K in Hugging Face's order (llama.cpp's converter does not permute them:
NEOX rope), per-head q/k RMSNorms, the ungated MLP down(xIELU(up x)) with each block's own
parameters, stored by llama.cpp's converter raw (as mlp.act_fn.* holds them) in the metadata
arrays xielu.alpha_p / alpha_n / beta / eps, and llama3 scaling (factor 8 over 8192 positions,
base 1.2e7) as the rope_freqs tensor. Broken on purpose the conversion fails here: Q/K taken as
llama-permuted (0.15), alpha_p and alpha_n swapped (0.080), beta and eps swapped (0.23), the
alphas softplus'd once more (as if the file held softplus(alpha): 0.21), alpha_n written as
beta + softplus(alpha_n) (not inverted: 0.15), every block with block 0's parameters (0.099),
the rope_freqs scaling dropped (8.1e-4; argmax still equal: the scaled frequencies are the slow
ones, over 60 positions).
nemotron (added 2026-11-29 with --logits, the same llama-cpp-python): 6.4e-7, argmax equal at
all 60 positions — Llama's sequential block with LayerNorm1P, whose weights llama.cpp's
converter stores as 1 + w (the folder gets w back: libvt adds 1 at load; the case's weights sit
near 0, family_models.norm_center), with biases on the LayerNorms, q/k/v/o and up/down, Q/K in
Hugging Face's order (NEOX rope), the first 8 of each head's 16 dims rotating (rope.dimension_count,
as the converter counts it: int(0.5 · hidden) // heads), the ungated relu² MLP. Broken on
purpose the conversion fails here: norm weights left as 1 + w (1.3) or shifted by 2 (1.0), Q/K
taken as llama-permuted (0.38), all 16 dims rotating (0.32), the two LayerNorms' biases
swapped (0.36); relu² replaced by silu is refused by libvt ("not supported for Nemotron"), and
so are the MLP biases with mlp_bias false.
gpt-neox and gpt-neox-sequential (added 2026-11-29 with --logits, the same llama-cpp-python):
1.9e-4 and 2.5e-4, argmax equal at all 60 positions — GPTNeoXModel's q | k | v rows (the
folder gets the per-head groups back), LayerNorms with biases, the parallel block and the
sequential one (use_parallel_residual), 4 and 8 of 16 dims rotating, every bias (the sequential
case has none: zeros, which llama.cpp needs). The difference is ggml's float16 GELU table (the
tolerance phi2's and starcoder2's): a numpy reference whose tanh GELU goes through float16 as
ggml's table does agrees with llama.cpp to 2.3e-6 and 3.6e-7, the plain tanh one to the same
1.9e-4 / 2.5e-4 as pyvt. llama.cpp applies the tanh GELU whatever the checkpoint said, so the
folder says gelu_fast; Pythia's exact GELU (hidden_act gelu) would be 2.3e-4 / 3.2e-4 from
llama.cpp, within this tolerance too (test_convert checks the written hidden_act). Broken on
purpose the conversion fails here: the qkv rows left q | k | v, so libvt regroups them as if
per head (0.85, 1.3), regrouped the wrong way (0.75, 0.93), use_parallel_residual inverted
(0.42, 0.32), all 16 dims rotating (0.15, 0.33), the qkv bias left q | k | v (0.35; the
sequential case's zeros cannot show it).
gpt2, gpt-bigcode and gpt-bigcode-mha-unscaled (added 2026-11-29 with --logits, the same
llama-cpp-python): 1.4e-4, 1.2e-4 and 2.0e-4, argmax equal at all 60 positions — GPT2Model's
[out, in] rows of the Conv1D weights (the folder holds them as Conv1D again), learned positions,
StarCoder multi-query (head_count_kv 1) and multi-head (head_count_kv = heads, q | k | v rows
put back per head; the case's scale_attn_weights false is not what llama.cpp computes, which
scales: the folder says true, as pyvt writes it). The difference is ggml's float16 GELU table
again: a numpy float64 reference with the plain tanh GELU is 1.4e-4 / 1.2e-4 / 2.0e-4 from
llama.cpp, with the GELU's input and output rounded through float16 9.8e-7 / 5.4e-6 / 7.6e-6.
Broken on purpose the conversion fails here: GPT-2's Conv1D floats left [out, in] (libvt
transposes them a second time: refused by the shape check; the square attn.c_proj alone, which
the check cannot see: 0.37), GPT-2's c_attn rows regrouped per head (0.41), the multi-head
c_attn left q | k | v (0.74), the positions not added (0.30, 0.34, 0.44) or shifted by one
(0.35, 0.42, 0.58).
falcon-7b, falcon-new-2ln, falcon-new-1ln-bias and falcon-seq-mha-bias (added 2026-11-29 with
--logits, the same llama-cpp-python): 1.1e-4, 1.3e-4, 2.1e-4 and 2.3e-4, argmax equal at all 60
positions — FalconModel's q | k | v rows (put back per KV head: 1, 2 of 4, 2 of 4 and 4 KV
heads), one norm or falcon-40b's two (attn_norm_2: attention reads ln_attn, the MLP ln_mlp),
llama.cpp's parallel block without linear biases (the two -bias cases' biases, and the
sequential case's post_attention_layernorm, are left out of the file and its folder, which says
parallel_attn). The difference is ggml's float16 GELU table again: a numpy float64 reference
with the plain tanh GELU is as far from llama.cpp as pyvt, with the GELU's input and output
rounded through float16 3.3e-6 / 1.5e-7 / 1.9e-7 / 4.4e-7. Broken on purpose the conversion
fails here: the qkv rows left q | k | v (0.55 on falcon-new-2ln, 0.62, 0.69) or regrouped twice
(0.44, 0.57, 0.77), the query heads dealt to the KV groups round-robin (0.18, 0.32), the second
norm left out as one-norm block (0.39) or the two norms swapped (0.38); falcon-7b's
multi-query q | k | v is Falcon's own order, which no regrouping changes. Falcon's own exact
GELU (activation gelu) is 1.5e-4 / 1.5e-4 / 2.5e-4 / 3.2e-4 from llama.cpp, inside the GELU
tolerance: that choice the test cannot see.
bloom and bloom-6heads-untied (added 2026-11-29 with --logits, the same llama-cpp-python):
1.3e-4 and 1.7e-4, argmax equal at all 60 positions — BloomModel's q | k | v rows (put back per
head), the embeddings' LayerNorm (token_embd_norm), ALiBi with llama.cpp's max bias 8 over 4
heads (powers of 2^-2) and 6 (those of 4, then odd powers of 2^-1: ggml's m0 / m1 are
transformers' _get_alibi_slopes), tied and untied (output.weight). transformers' own Bloom in
float64 on the converted folder is as far from llama.cpp (1.3e-4 / 1.7e-4) and pyvt within
3e-7 of it: ggml's float16 GELU table again. Broken on purpose the test fails: the qkv rows
left q | k | v (0.63 / 0.77) or regrouped twice (0.66 / 0.97), the embeddings' norm and ln_f
swapped (0.37 / 0.40); in libvt, the embeddings' norm skipped (0.34 / 0.31), the ALiBi slopes
reversed over the heads (0.094 / 0.20), left out (0.063 / 0.22), those of max bias 4 (0.084 /
0.12), or 2^(-8/n)^k over all n heads (exact for 4 heads, 0.18 for 6: why the 6-head case).
mpt and mpt-6heads-clip-scale (added 2026-11-29 with --logits, the same llama-cpp-python):
1.0e-4 and 8.6e-5, argmax equal at all 60 positions — MPTModel's q | k | v Wqkv as it is, the
bias-free LayerNorms, ALiBi of max_alibi_bias 8 over 4 heads and 6 (ggml's m0 / m1 slopes are
build_mpt_alibi_tensor's: its even k first), clamp_kqv 1.5 as clip_qkv, the case's softmax_scale
0.2 not in the file (llama.cpp scales by 1/sqrt(head_dim); the folder says null). transformers'
own MPT in float64 on the converted folder is as far (1.0e-4 / 8.6e-5) and pyvt within 2.4e-7
of it. llama.cpp applies ggml's tanh GELU where MptMLP is exact (no MptConfig field says
otherwise): transformers with the tanh GELU is 7.6e-5 / 7.2e-5 from llama.cpp, so that choice
is about 2e-5 of the error, inside the GELU tolerance, which cannot see it. Broken on purpose
the test fails: clamp_kqv dropped (6 heads: 0.086), the checkpoint's softmax_scale 0.2 kept
(0.045 / 0.032), norm_1 and norm_2 swapped (0.16 / 0.10); in libvt, the ALiBi slopes reversed
over the heads (0.12 / 0.12) or the odd k before the even ones (exact for 4 heads, 0.060 for 6).
glm4-moe, glm4-moe-qknorm and dots1 (added 2026-11-29 with --logits, the same
llama-cpp-python): 7.2e-7, 4.0e-7 and 3.7e-7, argmax equal at all 60 positions — DeepSeek-V3's
sigmoid router as llama.cpp's build_moe_ffn computes it (the choice on score + exp_probs_b
within the expert_group_used_count best of expert_group_count groups, a group scored by its two
best: glm4-moe 2 of 4 groups, dots1 1 of 2; the weights renormalized by expert_weights_norm and
times expert_weights_scale 2.5), the ungated shared experts (two wide in glm4-moe-qknorm), the
dense first block (leading_dense_block_count), GLM-4 MoE's q/k/v biases, per-head q/k norms and
first 8 of 16 dims rotating (NEOX), its post_attention_norm before the MLP, and the NextN block
after the model's (glm4-moe's file holds one: llama.cpp and pyvt leave it out). Broken on
purpose in the converted folder the test fails: glm4-moe with every group open (topk_group 4:
0.41), scaling 1 (0.35), not renormalized (0.49), every dim rotating (0.73); dots1 with one
group (0.27), renormalized (0.097), scaling 2 (0.31); glm4-moe-qknorm renormalized (0.11); the
correction bias zeroed (0.24, 0.28, 0.40). What llama.cpp cannot express is left out of the
files: dots1's sliding layer (llama.cpp's dots1 has no window; the converted folder says none)
and its q/k/v/o biases (llama.cpp's dots1 loads no o_proj bias, so a file with them does not
load); and llama.cpp's dots1 loads k and v as wide as q, so the case's 2 KV heads are repeated
to its 4 heads (test_convert.moe_gguf's mha: the same model; dots.llm1 itself is multi-head).
deepseek-v3, deepseek-v3-halfrope, deepseek-v2 and deepseek-v2-lora (added 2026-11-29 with
--logits, the same llama-cpp-python): 6.6e-7, 4.3e-7, 9.3e-7 and 3.7e-7 over all 60 positions
(the stored rows 6.2e-7, 5.7e-7, 1.0e-6, 4.7e-7), argmax equal at all 60 — multi-head latent
attention in llama.cpp's absorbed form (kv_b split into attn_k_b / attn_v_b: deepseek-v3,
-halfrope, -v2) and in its older decompressed one (attn_kv_b whole: deepseek-v2-lora), q's LoRA
(deepseek-v3, -v2-lora) and q_proj (q_lora_rank 0), the V3 sigmoid router (2 of 4 groups,
renormalized, scaling 2.5, exp_probs_b), V2's softmax one (greedy, scaling 1.5), the dense first
block, the shared experts, V2-Lite's 512 + 64 latent with YaRN (factor 4 from 64 positions,
mscale_all_dim 0.707 through yarn_log_multiplier). Broken on purpose in the converted folder
the test fails: deepseek-v3 rotate-half (rope_interleave false: 0.42), every group open (0.39),
scaling 1 (0.45), not renormalized (0.29); deepseek-v2 without mscale (0.094), scaling 1
(0.12), without YaRN (0.23); deepseek-v3-halfrope said rotate-half again (0.99). What
llama.cpp cannot express is left out of the files: the rotate-half RoPE of deepseek-v3-halfrope
(llama.cpp's deepseek2 always rotates pairs (2i, 2i + 1) and its converter ignores
rope_interleave: the file holds the case's rope rows of q and kv_a put as pairs, the same
model), and deepseek-v2's group_limited_greedy router (llama.cpp scores a softmax group by the
sum of its two best probabilities, transformers' DeepSeek-V2 by its best: such a file is
refused, so the case's file routes greedy, as V2-Lite does).
ernie4_5-moe, ernie4_5-moe-interval, minimax-m2, minimax-m2-full-rope, exaone-moe and
exaone-moe-types (added 2026-11-29 with --logits, the same llama-cpp-python): 6.6e-7, 2.1e-7,
3.9e-7, 6.3e-7, 5.1e-7 and 5.3e-7, argmax equal at all 60 positions — ERNIE 4.5 MoE's softmax
router choosing by probability + exp_probs_b ([1, experts] as its converter writes it) and
renormalizing, its pair-rotating RoPE (Q/K in Hugging Face's order, NORM rope), the dense first
block and the shared expert; MiniMax-M2's q/k norms over the whole projection, 8 of 16 dims
rotating (NEOX) or all 32, its sigmoid router with exp_probs_b, always renormalized, under
Mixtral's expert names; EXAONE MoE's per-head q/k norms, sliding layers of window 6 / 8 by the
pattern flags that alone rotate (the full ones NoPE), DeepSeek-V3's router (2 groups, 1 open,
scaling 2.5, renormalized; then neither), the shared experts (two wide in exaone-moe-types).
Broken on purpose in the converted folder the test fails: the correction bias zeroed
(ernie4_5-moe 0.30, -interval 0.033, minimax-m2 0.19, -full-rope 0.20, exaone-moe 0.74, -types
0.37); ernie4_5-moe's Q/K taken as llama-permuted (0.66); minimax-m2 with every dim rotating
(0.14); exaone-moe with every group open (0.70), scaling 1 (0.47), not renormalized (0.45), no
window so every layer rotates (0.50), every layer sliding (0.80); exaone-moe-types renormalized
(0.14). What llama.cpp cannot express is left out of the files: ernie4_5-moe-interval's MoE
every second layer up to the third (llama.cpp's ernie4_5-moe loads experts in every block from
leading_dense_block_count on and has no dense ones between: the file holds its one MoE layer,
MOE_LAYERS), and exaone-moe-types' dense middle layer (llama.cpp's exaone-moe has dense blocks
first only: the file holds its two MoE layers, sliding both).
lfm2 and lfm2-bias (added 2026-11-29 with --logits, the same llama-cpp-python): 4.5e-7 and
8.6e-7, argmax equal at all 60 positions — LFM2's gated short convolutions (llama.cpp's
ssm_conv over the kernel [hidden, l_cache]: 3 taps in blocks 0 and 2; 4 taps in blocks 0, 2
and 3, found by the 0s of attention.head_count_kv) beside Qwen3-style attention blocks (per-head
q/k norms, NEOX rope, base 1e6), token_embd_norm as the final norm, the MLP 96 wide as written
(lfm2's auto-adjusted from 96 with multiplier 1.5), tied and untied. Broken on purpose in the
converted folder the test fails: the taps reversed (0.82 / 1.0), C and x swapped in in_proj
(1.1 / 1.0), norm_eps 1e-2 (0.0080 / 0.017), rope base 1e4 (0.091 / 0.095). What llama.cpp
cannot express is left out of the file: lfm2-bias's in_proj / conv / out_proj biases
(llama.cpp's lfm2 loads none, so a file with them does not load; FAMILY_FILE) — pyvt's reading
of them is checked against the safetensors case only (tests/test_convert.py).
lfm2-moe and lfm2-moe-nobias (added 2026-11-29 with --logits, the same llama-cpp-python): 3.5e-7
and 3.0e-7, argmax equal at all 60 positions — LFM2's blocks with llama.cpp's lfm2moe router
(sigmoid scores, the choice on score + exp_probs_b, the chosen renormalized): lfm2-moe a dense
first block then top 2 of 8 experts with the case's expert bias, lfm2-moe-nobias top 3 of 4 in
every block. llama.cpp's lfm2moe never scales the chosen weights and always renormalizes them
(its converter writes neither routed_scaling_factor nor norm_topk_prob): lfm2-moe's scale 1.5
and lfm2-moe-nobias's unnormalized weights are not files it can hold, so the folders say 1.0 and
true (family_gguf). lfm2-moe-nobias has no expert bias (use_expert_bias false) and llama.cpp
needs exp_probs_b: its file holds zeros (FAMILY_FILE), which choose as none. Broken on purpose in
the converted folder the test fails: norm_topk_prob false (0.038 / 0.14), routed_scaling_factor
1.5 (0.048 / 0.078), one expert a token (0.095 / 0.16); w1 and w3 swapped in pyvt.convert (fails).
hunyuan-moe and hunyuan-moe-lists (added 2026-11-29 with --logits, the same llama-cpp-python):
4.2e-7 and 4.2e-7, argmax equal at all 60 positions — llama.cpp's hunyuan-moe: q/k norms after
RoPE, a softmax router renormalizing its top 2 of 8 / top 3 of 4, one shared MLP; hunyuan-moe's
alpha 1000 as the base llama.cpp's converter stores (rope.freq_base = 10000 · 1000^(16/14),
float32: test_convert._hunyuan_moe_file_model), untied; hunyuan-moe-lists with q/k/v biases and
tied. llama.cpp loads no o_proj bias, so the lists case's file leaves its o_proj biases out and
its folder holds them as zeros (pyvt writes zeros for a file with q/k/v biases; a file with
attn_output.bias is refused). Broken on purpose in the converted folder the test fails: the
unstretched base (0.18) or a tenth of it (0.084), one expert a token (0.28 / 0.11),
rms_norm_eps 1e-2 (0.0083 / 0.0033).
ministral3 and ministral3-window (added 2026-11-29 with --logits, the same llama-cpp-python): 4.5e-7
and 5.9e-7, argmax equal at all 60 positions — llama.cpp's mistral3: Llama's block with Q/K
permuted, each query times 1 + attention.temperature_scale · log(1 + floor(pos /
original_context_length)) (0.1 per 8 positions, 0.3 per 16: the scale steps through the
sequence), ministral3 with YaRN (factor 4 from 8 positions, the rotation's factor mscale(4, 1) /
mscale(4, yarn_log_multiplier 1) = 1), ministral3-window with the default RoPE and head_dim 32.
llama.cpp's mistral3 has no sliding window: ministral3-window's file has none and its folder
says none (family_gguf). Broken on purpose in the converted folder the test fails: beta 0 (0.035
/ 0.11), the original length doubled (0.015 / 0.048), no YaRN (0.39), no mscale fields (the
rotation then scaled by mscale(4, 1): 0.051), mscale_all_dim 0.5 (0.026); Q/K left permuted in
pyvt.convert (fails).
mistral4 and mistral4-nolora (added 2026-11-29 with --logits, the same llama-cpp-python): 4.9e-7 and
6.6e-7, argmax equal at all 60 positions — llama.cpp's mistral4 (deepseek2's graph): the latent
attention in its absorbed form (attn_k_b / attn_v_b), q's LoRA (mistral4) or q_proj, a softmax
router choosing within the best of 2 groups by their two best (mistral4: 1 of 2 open, renormalized,
times 1.5; nolora: 3 of 4, raw), the dense first block, one / two shared experts, the experts as
ffn_gate_up_exps (mistral4) or ffn_gate_exps / ffn_up_exps apart (nolora), the query scale from
attention.temperature_scale / temperature_length (0.1 per 8, 0.2 per 16), YaRN factor 4 / 2.
llama.cpp's mistral4 does not take deepseek2's mscale = mscale_all_dim: it scales every score by
mscale(f, 1)² and the rotated dims' by (mscale(f, 1) / mscale(f, m))² more, m the file's
yarn_log_multiplier / 0.1 (mistral4: 1; nolora's file has none, as its config has no
mscale_all_dim: m = 0), which the folders state as mscale_all_dim 1 and mscale(f, mscale) =
mscale(f, 1)² / mscale(f, m) (nolora: mscale 2.069, not the case's own model, which a llama.cpp
file cannot hold; test_convert._mistral4_file_model). nolora's rotate-half rope rows are put as
pairs in its file (rope_interleave true: the same model). Broken on purpose in the converted folder
the test fails: beta 0 (0.052 / 0.059), the original length doubled (0.027 / 0.039), the
renormalization flipped (0.35 / 0.022), scaling 1 / 2 (0.34 / 0.19), rotate-half (0.35 / 0.39),
no YaRN (0.17 / 0.13), every group open (mistral4: 0.19), mscale_all_dim 0.5 (mistral4: 0.041),
mscale 1 as deepseek2's reading would give (nolora: 0.060).
minicpm3 and minicpm3-lora-longrope (added 2026-11-29 with --logits, the same llama-cpp-python):
2.6e-7 and 1.8e-7, argmax equal at all 60 positions — llama.cpp's minicpm3: the latent attention
decompressed (attn_kv_b whole), q's LoRA, Q and k_pe rotating halves (NEOX rope, rows as
transformers holds them), Llama's MLP, and MiniCPM's scales as its graph fixes them (embeddings
times 12, residual branches times 1.4 / sqrt(3 blocks), the final norm times 256 / 64: the
folders say scale_emb 12, scale_depth 1.4, dim_model_base 256; the minicpm3 case's own 32 is not
one a file can hold). minicpm3-lora-longrope is the minicpm3 case with minicpm3-longrope's
LongRoPE (rope_factors_long / _short, attn_factor sqrt(1 + ln 4 / ln 64)), its original length
written as 32 here: llama.cpp takes the long factors for a context (n_ctx 128) past it from the
first token, pyvt and transformers once the sequence is past it — both past it over these 60
tokens. llama.cpp cannot run the minicpm3-longrope case itself (q_proj: its minicpm3 needs q's
LoRA). Broken on purpose in the converted folder the test fails: dim_model_base 32 (0.87),
scale_depth 1 (0.0080), scale_emb 1 (0.35), the attention factor left to transformers' derivation
(1.3e-3), the short factors (original length 256: 1.6e-3), no LongRoPE (1.5e-3).
exaone (added 2026-11-30 with --logits, the same llama-cpp-python): 3.7e-7, argmax equal at all
60 positions — llama.cpp's exaone: Llama's block, Q/K in Hugging Face's order (ExaoneModel is not
Llama's converter: NEOX rope), head_dim 24 as key_length, the case's llama3 scaling (factor 8,
1 / 4, original length 32, base 1e6) as the rope_freqs tensor its converter computes, recovered
here as llama3 with those parameters; the folder under EXAONE's own names (transformer.h.N.ln_1,
attn.attention.*, mlp.c_fc_0 / c_fc_1 / c_proj) and config.json's (num_layers, ...), as
libvt's Exaone row reads them. The file says rope.dimension_count 24, every dim (ExaoneModel
writes hidden / heads, 16 for this case, which llama.cpp's exaone refuses, and so does pyvt).
Broken on purpose in the converted folder the test fails: no llama3 scaling (0.46), Q/K taken
as llama-permuted (0.35), ln_1 and ln_2 swapped (0.43), c_fc_0 and c_fc_1 swapped (0.34).
jais2 and jais2-nobias-tied (added 2026-11-30 with --logits, the same llama-cpp-python): 7.4e-7
and 3.0e-7, argmax equal at all 60 positions — llama.cpp's jais2: LayerNorms with their biases
(attention.layer_norm_epsilon; the rms eps its converter also writes, 1e-6 here, is not read),
q/k/v/o biases, the ungated relu² MLP (LLM_FFN_RELU_SQR) with its biases, Q/K in Hugging Face's
order rotating over the whole head (NEOX rope; head_dim 24 as key_length), untied; one KV head
and tied. llama.cpp's jais2 needs the o_proj, MLP and norm biases: jais2-nobias-tied's file
holds zeros there (test_convert.family_gguf, its folder saying attention_bias and mlp_bias: the
same model). Broken on purpose in the converted folder the test fails: the two LayerNorms'
biases swapped (0.56), the final norm's bias zeroed (0.31), Q/K taken as llama-permuted (0.46),
the MLP biases zeroed (0.48).

afmoe-gguf (added 2026-11-30 with --logits, the same llama-cpp-python): 5.3e-7. The family case
of 4 blocks as llama.cpp can hold it — every 4th block full and without RoPE (llama.cpp's fixed
rule), the others sliding over 6 positions with the file's base (50000), muP's embedding scale
(always applied by llama.cpp's afmoe), head_dim 24, the attention gate, the sandwich norms, a
dense first block, a sigmoid router with its expert bias renormalized and scaled by 1.5, two
shared experts. Broken on purpose in the converted folder the test fails: muP off (0.97), every
block sliding and rotating (0.11), every second block full (0.11), the two post norms swapped
(0.11), base 10000 (0.015), route_scale 1 (0.037).

hunyuan-dense (added 2026-11-30 with --logits, the same llama-cpp-python): 5.4e-7, argmax equal at
all 60 positions — llama.cpp's hunyuan-dense (hunyuan-vl's graph): q/k norms after RoPE, q/k/v
biases and no o_proj bias (the case's folder holds zeros there), NTK alpha 1000 baked into
rope.freq_base as its converter does (test_convert._hunyuan_moe_file_model). Broken on purpose in
the converted folder the test fails: base 10000, the alpha not applied (0.11), q's bias zeroed
(0.036).

olmo and olmo-clip-bias-tied (added 2026-11-30 with --logits, the same llama-cpp-python): 4.8e-7
and 3.1e-7 — llama.cpp's olmo: LayerNorms without weights (no norm tensors), Q/K permuted by its
converter and unpermuted by pyvt, untied; clamp_kqv 0.5 and tied (the case's biases left out of
both: llama.cpp's olmo has no o_proj bias). Broken on purpose in the converted folder the test
fails: clip_qkv dropped (0.22), base 500000 (0.24 and 0.0042).

hy-v3 and hy-v3-types (added 2026-11-30 with --logits, the same llama-cpp-python): 4.1e-7 and
4.6e-7, argmax equal at all 60 positions — llama.cpp's hy_v3: q/k norms before RoPE, a dense first
block (hy-v3), a sigmoid router choosing on score + exp_probs_b (unsuffixed, as its converter
writes it), renormalized, times 2.826 / 1.5, one / two shared experts; hy-v3-types' MoE layers
alone (llama.cpp takes dense blocks where ffn_gate_inp is absent, pyvt dense ones first only) and
without its biases (llama.cpp's hy_v3 has no o_proj bias). Broken on purpose in the converted
folder the test fails: router_scaling_factor 1 (0.35 and 0.14).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import gguf_writer as gw

_PATH = Path(__file__).parent / "data" / "gguf_logits_llamacpp.json"
# (The tool that writes the file imports build_case from here before the file exists; a missing
# file fails test_every_architecture_is_covered.)
DATA = json.loads(_PATH.read_text(encoding="utf-8")) if _PATH.exists() else {"cases": {}}
CASES = sorted(DATA["cases"])
# Largest |pyvt - llama.cpp| / largest |llama.cpp logit| allowed (measured values in the docstring).
TOL = {"gemma": 2e-3, "other": 1e-5}
WINDOWS = {"phi3-window8": 8}  # rows at or past the window are not compared (see the docstring)
# the MoE layers of a case with a dense one (ernie4_5-moe-interval: MoE every second layer up to
# the third, exaone-moe-types: a dense middle layer; llama.cpp has dense blocks first only)
MOE_LAYERS = {"qwen3-moe": [0, 2], "ernie4_5-moe-interval": [1], "exaone-moe-types": [0, 2], "hy-v3-types": [0, 2]}
# How a MoE case's file is built beside its weights (test_convert.moe_gguf): glm4-moe with a NextN
# block after the model's (GLM-4.5's files hold one; llama.cpp and pyvt leave it out), dots1
# without its q/k/v/o biases (llama.cpp's dots1 loads no o_proj bias: such a file does not load)
# and with its 2 KV heads repeated to the 4 heads (llama.cpp's dots1 loads k and v as wide as q;
# dots.llm1 itself is multi-head).
MOE_FILE = {"glm4-moe": dict(mtp=True),
            "dots1": dict(mha=True, drop=tuple(f"blk.{i}.attn_{t}.bias" for i in range(3) for t in ("q", "k", "v", "output"))),
            "deepseek-v2-lora": dict(kv_b="whole")}  # (an older deepseek2 file: kv_b whole, llama.cpp decompresses)
# How a family case's file is built beside its weights (test_convert.family_gguf): lfm2-bias
# without its convolution biases (llama.cpp's lfm2 loads none: a file with them does not load).
# lfm2-moe-nobias with a zero router bias in each MoE block (llama.cpp's lfm2moe needs exp_probs_b:
# a file without does not load; a zero bias chooses as none).
FAMILY_FILE = {"lfm2-bias": dict(drop=tuple(f"blk.{i}.shortconv.{t}.bias" for i in (0, 2, 3)
                                            for t in ("in_proj", "conv", "out_proj"))),
               "lfm2-moe-nobias": dict(extra_tensors=[(f"blk.{i}.exp_probs_b.bias", gw.F32, (4,),
                                                       gw.quant_f32(np.zeros(4, np.float32))) for i in range(3)]),
               # minicpm3-lora-longrope with an original length of 32: llama.cpp takes the long factors
               # for a context past it from the first token (n_ctx 128), pyvt once the sequence (60) is past it
               "minicpm3-lora-longrope": dict(meta={"minicpm3.rope.scaling.original_context_length": gw.Val(gw.UINT32, 32)})}
ROUNDED_YARN = {"gpt-oss"}  # compared with llama.cpp's rounded YaRN ramp (see the docstring)


def build_case(folder: Path, spec) -> Path:
    """Write case `spec` (tools/make_llamacpp_golden.py's LOGIT_CASES) as a GGUF in `folder`."""
    import test_convert as T

    folder.mkdir(parents=True, exist_ok=True)
    kind, name, arg = spec
    if kind == "tiny":
        path = folder / f"{name}.gguf"
        T.make_tiny_llama(path, arch=name, tied=bool(arg), bf16_exact=True)
        return path
    # llama.cpp wants as many tokens as embedding rows: the test vocabulary padded with unused ones.
    import family_models as F

    rows = F.load_golden()["cases"][T.TILED.get(name, (name,))[0]]["config"]["vocab_size"]
    toks, types = T.byte_level_vocab()
    pad = rows - len(toks)
    meta = {"tokenizer.ggml.tokens": toks + [f"<unused_{i}>" for i in range(pad)],
            "tokenizer.ggml.token_type": gw.Val(gw.ARRAY, types + [5] * pad, gw.INT32)}
    if kind == "moe":  # (llama.cpp's MoE files have experts in every block: qwen3-moe's dense one goes)
        path, _ = T.moe_gguf(folder, name, arg, meta=meta, keep_layers=MOE_LAYERS.get(name), **MOE_FILE.get(name, {}))
        return path
    extra = dict(FAMILY_FILE.get(name, {}))
    path, _ = T.family_gguf(folder, name, arg, meta=meta | extra.pop("meta", {}), **extra)
    return path


def test_every_architecture_is_covered():
    archs = {c["spec"][2] if c["spec"][0] in ("family", "moe") else c["spec"][1] for c in DATA["cases"].values()}
    assert archs >= {"llama", "qwen2", "qwen3", "gemma", "gemma2", "phi2", "stablelm", "starcoder2", "gemma3", "phi3", "qwen2moe", "qwen3moe", "smollm3", "granite",
                     "olmo2", "granitemoe", "olmoe", "gpt-oss", "ernie4_5", "seed_oss", "glm4", "command-r", "cohere2",
                     "arcee", "exaone4", "apertus", "nemotron", "gptneox", "gpt2", "starcoder", "falcon", "bloom", "mpt",
                     "glm4moe", "dots1", "deepseek2", "ernie4_5-moe", "minimax-m2", "exaone-moe", "lfm2",
                     "lfm2moe", "hunyuan-moe", "mistral3", "mistral4", "minicpm3", "exaone", "jais2", "afmoe", "hunyuan-dense", "olmo", "hy_v3"}
    assert any(c["spec"][:3] == ["moe", "mixtral", "llama"] for c in DATA["cases"].values())
    assert any(c["spec"][:3] == ["family", "olmo3", "olmo2"] for c in DATA["cases"].values())  # (olmo2 with a window)
    assert any(c["spec"][:3] == ["family", "exaone4-64", "exaone4"] for c in DATA["cases"].values())  # (its window)


@pytest.mark.parametrize("name", CASES)
def test_gguf_logits_match_llama_cpp(tmp_path, name):
    import pyvt.convert as convert
    from pyvt import _model

    case = DATA["cases"][name]
    path = build_case(tmp_path / "gguf", case["spec"])
    out = convert.convert_gguf(path, tmp_path / "hf", dtype="f32")
    if name in ROUNDED_YARN:  # llama.cpp's YaRN ramp (see the docstring)
        cfg = json.loads((out / "config.json").read_text())
        assert cfg["rope_scaling"]["truncate"] is False
        cfg["rope_scaling"]["truncate"] = True
        (out / "config.json").write_text(json.dumps(cfg))
    seq = DATA["sequence"]
    with _model.Model(str(out), device="cpu", weight_format="bf16", kv_cache="f32") as m:
        got = m.logits(seq).astype(np.float64)
    n = WINDOWS.get(name, len(seq))
    rows = [r for r in DATA["rows"] if r < n]
    want = np.asarray(case["logits"], np.float64)[[DATA["rows"].index(r) for r in rows]]
    err = np.abs(got[rows] - want).max() / np.abs(want).max()
    gelu = name.startswith("gemma") or case["spec"][2] in ("phi2", "starcoder2", "gptneox", "gpt2", "starcoder", "falcon", "bloom", "mpt")  # (ggml's float16 GELU table)
    assert err <= TOL["gemma" if gelu else "other"], f"{name}: {err:.3g}"
    np.testing.assert_array_equal(got[:n].argmax(-1), case["argmax"][:n])
