"""The per-architecture GGUF key names llama.cpp reads (src/llama-arch.cpp LLM_KV_NAMES, "%s." removed).

Used to catch typos in YAML specs; a GGUF file may carry any key.
"""

ARCH_KEYS: frozenset[str] = frozenset(
    """
    activation.situ_beta activation.situ_linear_beta adapters.count adapters.lora_rank
    adapters.router_gain adapters.token_ids_activate adapters.token_ids_substitute attention.causal
    attention.clamp_kqv attention.compress_ratios attention.compress_rope_freq_base
    attention.decay_lora_rank attention.gate_lora_rank attention.group_norm_epsilon
    attention.group_norm_groups attention.head_count attention.head_count_kv attention.iclr_lora_rank
    attention.indexer.block_size attention.indexer.head_count attention.indexer.key_length
    attention.indexer.kpool attention.indexer.kpool_select_tail attention.indexer.local_blocks
    attention.indexer.top_k attention.indexer.types attention.key_length attention.key_length_mla
    attention.key_length_mla_swa attention.key_length_swa attention.kv_lora_rank
    attention.kv_lora_rank_swa attention.layer_norm_epsilon attention.layer_norm_rms_epsilon
    attention.max_alibi_bias attention.output_group_count attention.output_lora_rank
    attention.output_scale attention.q_lora_rank attention.recurrent_layers
    attention.relative_buckets_count attention.rope_pattern attention.scale attention.shared_kv_layers
    attention.sliding_window attention.sliding_window_pattern attention.temperature_length
    attention.temperature_scale attention.value_length attention.value_length_mla
    attention.value_length_mla_swa attention.value_length_swa attention.value_residual_mix_lora_rank
    attention.value_scale attn_logit_softcapping attn_res.block_size block_count block_size
    classifier.output_labels classifier.pooling_type context_length conv_group_size conv_kernel_size
    convnext.block_count convnext.embedding_length decoder_block_count decoder_start_token_id
    deepstack_mapping dense_2_feat_in dense_2_feat_out dense_3_feat_in dense_3_feat_out embedding_length
    embedding_length_out embedding_length_per_layer_input embedding_scale
    expert_chunk_feed_forward_length expert_count expert_feed_forward_length expert_gating_func
    expert_group_count expert_group_scale expert_group_used_count expert_latent_length
    expert_shared_count expert_shared_feed_forward_length expert_used_count expert_weights_norm
    expert_weights_scale experts_per_group features_length feed_forward_length final_logit_softcapping
    full_attention_interval hash_layer_count hidden_activation hrm.h_cycles hrm.l_cycles
    hrm.layers_per_stack hrm.prefix_lm hyper_connection.count hyper_connection.epsilon
    hyper_connection.low_rank hyper_connection.magnitude hyper_connection.sinkhorn_iterations
    interleave_moe_layer_step kda.gate_lower_bound kda.head_dim kda.safe_gate leading_dense_block_count
    logit_scale moe_every_n_layers moe_latent_size n_deepstack_layers nextn_predict_layers
    norm_before_fc norm_before_residual num_loops ple.conv_kernel ple.eos_token_id ple.head_offsets
    ple.head_vocab_sizes ple.heads_per_ngram ple.image_token_id ple.layer_multipliers ple.layers
    ple.ngram_size pooling_type posnet.block_count posnet.embedding_length rescale_every_n_layers
    residual_scale rope.dimension_count rope.dimension_count_swa rope.dimension_sections rope.freq_base
    rope.freq_base_swa rope.scale_linear rope.scaling.alpha rope.scaling.attn_factor rope.scaling.factor
    rope.scaling.finetuned rope.scaling.original_context_length rope.scaling.type
    rope.scaling.yarn_attn_factor rope.scaling.yarn_beta_fast rope.scaling.yarn_beta_slow
    rope.scaling.yarn_ext_factor rope.scaling.yarn_log_multiplier router_logit_softcapping selector_rank
    selector_top_k shortconv.l_cache skip_loop_final_norm ssm.conv_kernel ssm.dt_b_c_rms ssm.group_count
    ssm.inner_size ssm.state_size ssm.time_step_rank swiglu_clamp_exp swiglu_clamp_shexp swin_norm
    target_hidden_size target_layers tensor_data_layout time_decay_extra_dim time_mix_extra_dim
    token_shift_count use_parallel_residual vocab_size wkv.head_size
    """.split()
)
