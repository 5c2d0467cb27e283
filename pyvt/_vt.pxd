# cython: language_level=3
# Declaration-for-declaration mirror of libvt/include/vt/vt.h. Compute calls are nogil.
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

cdef extern from "vt/vt.h" nogil:
    # ---- status, errors, version, backends
    ctypedef enum vt_status:
        VT_OK
        VT_STATUS_INVALID_ARGUMENT
        VT_STATUS_FILE_NOT_FOUND
        VT_STATUS_IO_ERROR
        VT_STATUS_FORMAT_ERROR
        VT_STATUS_UNSUPPORTED
        VT_STATUS_OUT_OF_MEMORY
        VT_STATUS_BACKEND_UNAVAILABLE
        VT_STATUS_CANCELLED
        VT_STATUS_INTERNAL

    const char* vt_last_error()
    const char* vt_status_name(vt_status status)
    const char* vt_version()
    int vt_version_major()
    int vt_version_minor()
    int vt_version_patch()
    const char* vt_backend_info()
    int vt_cuda_available()
    vt_status vt_set_num_threads(int n)
    int vt_get_num_threads()
    uint64_t vt_parallel_regions()

    # ---- dtypes and conversions
    ctypedef enum vt_dtype:
        VT_DTYPE_F32
        VT_DTYPE_F16
        VT_DTYPE_BF16
        VT_DTYPE_F8_E4M3
        VT_DTYPE_I8
        VT_DTYPE_I32
        VT_DTYPE_U8
        VT_DTYPE_F64
        VT_DTYPE_I64

    size_t vt_dtype_size(vt_dtype dtype)
    vt_status vt_convert(const void* src, vt_dtype src_dtype, void* dst, vt_dtype dst_dtype,
                         size_t n)
    vt_status vt_transpose(const void* src, void* dst, size_t rows, size_t cols, size_t elem_size)

    # ---- packed weights
    ctypedef enum vt_format:
        VT_FORMAT_FP8_CHANNEL
        VT_FORMAT_FP8_BLOCKED
        VT_FORMAT_INT8_BLOCKED
        VT_FORMAT_INT8_SPARSE24
        VT_FORMAT_INT4_SPARSE24
        VT_FORMAT_BF16
        VT_FORMAT_INT4_BLOCKED
        VT_FORMAT_INT4_MIN_BLOCKED
        VT_FORMAT_MXFP4
        VT_FORMAT_AUTO

    ctypedef enum vt_device_kind:
        VT_DEVICE_AUTO
        VT_DEVICE_CPU
        VT_DEVICE_CUDA

    ctypedef struct vt_prepack_options:
        uint32_t struct_size
        int32_t format
        int32_t block_size
        int32_t device
        int32_t device_index

    vt_prepack_options vt_prepack_default_options()

    ctypedef struct vt_packed:
        pass

    vt_status vt_prepack(const void* w, vt_dtype dtype, int64_t out_features, int64_t in_features,
                         const vt_prepack_options* options, vt_packed** out)
    void vt_packed_free(vt_packed* packed)

    ctypedef struct vt_packed_info:
        uint32_t struct_size
        int32_t format
        int32_t block_size
        int64_t out_features
        int64_t in_features
        int64_t nbytes
        int32_t device
        int32_t device_index

    vt_status vt_packed_get_info(const vt_packed* packed, vt_packed_info* info)
    vt_status vt_packed_unpack(const vt_packed* packed, float* dst)

    # ---- linears
    ctypedef enum vt_activation:
        VT_ACTIVATION_NONE
        VT_ACTIVATION_GELU

    ctypedef struct vt_linear_options:
        uint32_t struct_size
        int32_t quantize_input
        int32_t activation

    vt_linear_options vt_linear_default_options()
    vt_status vt_linear(const vt_packed* w, const float* x, int64_t m, const float* bias,
                        const vt_linear_options* options, float* y)
    vt_status vt_linear_swiglu(const vt_packed* gate, const vt_packed* up, const float* x,
                               int64_t m, const float* gate_bias, const float* up_bias,
                               const vt_linear_options* options, float* y)

    # ---- linears on device memory (CUDA), device memory for callers
    vt_status vt_linear_device(const vt_packed* w, const float* x, int64_t m, const float* bias,
                               const vt_linear_options* options, float* y, void* stream)
    vt_status vt_linear_swiglu_device(const vt_packed* gate, const vt_packed* up, const float* x,
                                      int64_t m, const float* gate_bias, const float* up_bias,
                                      const vt_linear_options* options, float* y, void* stream)

    ctypedef enum vt_copy_kind:
        VT_COPY_HOST_TO_DEVICE
        VT_COPY_DEVICE_TO_HOST

    vt_status vt_device_alloc(int32_t device_index, size_t bytes, void** ptr)
    void vt_device_free(int32_t device_index, void* ptr)
    vt_status vt_device_copy(int32_t device_index, void* dst, const void* src, size_t bytes,
                             int32_t kind, void* stream)

    # ---- sampling
    vt_status vt_argmax(const float* x, int64_t n, int64_t* index)
    vt_status vt_softmax(const float* x, int64_t n, float* y)

    ctypedef struct vt_sample_options:
        uint32_t struct_size
        float temperature
        int32_t top_k
        float top_p
        uint64_t seed
        float min_p
        float repetition_penalty
        float frequency_penalty
        float presence_penalty

    int VT_MAX_TOP_K
    int VT_ABI_VERSION
    int vt_abi_version()
    vt_sample_options vt_sample_default_options()
    vt_status vt_sample(const float* logits, int64_t n, const vt_sample_options* options,
                        uint64_t step, int64_t* token)
    int VT_PROCESS_PENALTIES
    int VT_PROCESS_MIN_P
    int VT_PROCESS_CANDIDATES
    vt_status vt_logits_process(const float* logits, int64_t n, const vt_sample_options* options,
                                const int32_t* inputs, int64_t n_inputs, const int32_t* chosen,
                                int64_t n_chosen, int32_t flags, float* out)
    double vt_uniform(uint64_t seed, uint64_t step)

    # ---- models
    ctypedef struct vt_model:
        pass

    ctypedef int (*vt_progress_fn)(void* user, int64_t done, int64_t total)

    ctypedef struct vt_model_options:
        uint32_t struct_size
        int32_t weight_format
        int32_t block_size
        int32_t num_layers
        int32_t device
        int32_t device_index
        int64_t max_seq_len
        vt_progress_fn progress
        void* progress_user
        const int32_t* extra_eos_ids
        int32_t num_extra_eos
        const char* packed_cache_dir
        int32_t kv_cache_dtype

    vt_model_options vt_model_default_options()
    vt_status vt_model_load(const char* path, const vt_model_options* options, vt_model** out)
    void vt_model_free(vt_model* model)

    int VT_MAX_EOS

    ctypedef struct vt_model_info:
        uint32_t struct_size
        int64_t vocab_size
        int64_t hidden_size
        int64_t intermediate_size
        int32_t num_layers
        int32_t num_heads
        int32_t num_kv_heads
        int32_t head_dim
        int64_t max_seq_len
        float rms_norm_eps
        float rope_theta
        int32_t tie_word_embeddings
        int32_t bos_token_id
        int32_t num_eos
        int32_t eos_token_ids[16]
        int32_t weight_format
        int32_t block_size
        int32_t device
        int32_t device_index
        int64_t weight_bytes
        int64_t total_bytes
        char family[32]
        char features[256]
        int32_t kv_cache_dtype
        int64_t cache_bytes_per_token

    vt_status vt_model_get_info(const vt_model* model, vt_model_info* info)

    # ---- sessions
    ctypedef struct vt_session:
        pass

    vt_status vt_session_new(const vt_model* model, int64_t max_tokens, vt_session** out)
    void vt_session_free(vt_session* session)
    vt_status vt_session_reset(vt_session* session)
    int64_t vt_session_length(const vt_session* session)
    vt_status vt_session_copy_prefix(vt_session* dst, const vt_session* src, int64_t n)

    ctypedef enum vt_logits_mode:
        VT_LOGITS_NONE
        VT_LOGITS_LAST
        VT_LOGITS_ALL

    vt_status vt_session_prefill(vt_session* session, const int32_t* tokens, int64_t n,
                                 const vt_sample_options* sampling, int32_t* next_token,
                                 float* logits, vt_logits_mode logits_mode)
    vt_status vt_session_decode(vt_session* session, int32_t token,
                                const vt_sample_options* sampling, int32_t* next_token,
                                float* logits)
    vt_status vt_session_truncate(vt_session* session, int64_t n)
    int VT_MAX_VERIFY
    vt_status vt_session_verify(vt_session* session, const int32_t* tokens, int64_t n,
                                const vt_sample_options* sampling, int32_t* out_tokens, int64_t* n_out)
    int VT_MAX_BATCH
    vt_status vt_session_decode_batch(vt_session* const* sessions, int64_t n, const int32_t* tokens,
                                      const vt_sample_options* sampling, int32_t* next_tokens,
                                      float* logits)

    # ---- one-call generation
    ctypedef struct vt_generate_options:
        uint32_t struct_size
        int32_t max_new_tokens
        int32_t stop_on_eos
        vt_sample_options sampling

    vt_generate_options vt_generate_default_options()

    ctypedef struct vt_generate_stats:
        uint32_t struct_size
        int64_t prompt_tokens
        int64_t generated_tokens
        double prefill_ms
        double decode_ms
        int32_t finish_reason

    vt_status vt_generate(const vt_model* model, const int32_t* prompt, int64_t n_prompt,
                          const vt_generate_options* options, int32_t* out_tokens,
                          int64_t out_capacity, int64_t* n_out, vt_generate_stats* stats)
