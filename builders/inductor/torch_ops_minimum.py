"""Every ATen overload and prim of torch 2.11 (2.11.0+cu130), as builders/inductor/portable_ops.py
reads them from its wheel: the ops a captured reference may call."""
MINIMUM_TORCH = "2.11"
OPS = """
aten::__and__.Scalar aten::__and__.Tensor aten::__iand__.Scalar aten::__iand__.Tensor aten::__ilshift__.Scalar
aten::__ilshift__.Tensor aten::__ior__.Scalar aten::__ior__.Tensor aten::__irshift__.Scalar
aten::__irshift__.Tensor aten::__ixor__.Scalar aten::__ixor__.Tensor aten::__lshift__.Scalar
aten::__lshift__.Scalar_out aten::__lshift__.Tensor aten::__lshift__.Tensor_out aten::__or__.Scalar
aten::__or__.Tensor aten::__rshift__.Scalar aten::__rshift__.Scalar_out aten::__rshift__.Tensor
aten::__rshift__.Tensor_out aten::__xor__.Scalar aten::__xor__.Tensor aten::_adaptive_avg_pool2d.default
aten::_adaptive_avg_pool2d.out aten::_adaptive_avg_pool2d_backward.default
aten::_adaptive_avg_pool2d_backward.out aten::_adaptive_avg_pool3d.default aten::_adaptive_avg_pool3d.out
aten::_adaptive_avg_pool3d_backward.default aten::_adaptive_avg_pool3d_backward.out
aten::_add_batch_dim.default aten::_add_relu.Scalar aten::_add_relu.Scalar_out aten::_add_relu.Tensor
aten::_add_relu.out aten::_add_relu_.Scalar aten::_add_relu_.Tensor aten::_addmm_activation.default
aten::_addmm_activation.out aten::_aminmax.default aten::_aminmax.dim aten::_aminmax.dim_out
aten::_aminmax.out aten::_amp_foreach_non_finite_check_and_unscale.default
aten::_amp_foreach_non_finite_check_and_unscale.out aten::_amp_foreach_non_finite_check_and_unscale_.default
aten::_amp_update_scale.default aten::_amp_update_scale.out aten::_amp_update_scale_.default
aten::_assert_async.default aten::_assert_async.msg aten::_assert_scalar.default
aten::_assert_tensor_metadata.default aten::_autocast_to_full_precision.default
aten::_autocast_to_reduced_precision.default aten::_backward.default aten::_batch_norm_impl_index.default
aten::_batch_norm_impl_index_backward.default aten::_batch_norm_no_update.default
aten::_batch_norm_no_update.out aten::_batch_norm_with_update.default aten::_batch_norm_with_update.out
aten::_batch_norm_with_update_functional.default aten::_cast_Byte.default aten::_cast_Char.default
aten::_cast_Double.default aten::_cast_Float.default aten::_cast_Half.default aten::_cast_Int.default
aten::_cast_Long.default aten::_cast_Short.default aten::_cdist_backward.default aten::_cdist_backward.out
aten::_cdist_forward.default aten::_cdist_forward.out aten::_cholesky_solve_helper.default
aten::_cholesky_solve_helper.out aten::_choose_qparams_per_tensor.default aten::_chunk_cat.default
aten::_chunk_cat.out aten::_coalesce.default aten::_coalesce.out aten::_coalesced.default aten::_coalesced.out
aten::_coalesced_.default aten::_compute_linear_combination.default aten::_compute_linear_combination.out
aten::_conj.default aten::_conj_copy.default aten::_conj_copy.out aten::_conj_physical.default
aten::_conj_physical.out aten::_conv_depthwise2d.default aten::_conv_depthwise2d.out
aten::_convert_indices_from_coo_to_csr.default aten::_convert_indices_from_coo_to_csr.out
aten::_convert_indices_from_csr_to_coo.default aten::_convert_indices_from_csr_to_coo.out
aten::_convert_weight_to_int4pack.default aten::_convert_weight_to_int4pack_for_cpu.default
aten::_convolution.default aten::_convolution.deprecated aten::_convolution.out
aten::_convolution_double_backward.default aten::_convolution_mode.default aten::_copy_from.default
aten::_copy_from.out aten::_copy_from_and_resize.default aten::_copy_from_and_resize.out
aten::_cslt_compress.default aten::_cslt_sparse_mm.default aten::_cslt_sparse_mm_search.default
aten::_ctc_loss.Tensor aten::_ctc_loss.Tensor_out aten::_ctc_loss.default aten::_ctc_loss.out
aten::_ctc_loss_backward.Tensor aten::_ctc_loss_backward.default aten::_ctc_loss_backward.out
aten::_cudnn_attention_backward.default aten::_cudnn_attention_forward.default aten::_cudnn_ctc_loss.Tensor
aten::_cudnn_ctc_loss.default aten::_cudnn_ctc_loss.out aten::_cudnn_init_dropout_state.default
aten::_cudnn_init_dropout_state.out aten::_cudnn_rnn.default aten::_cudnn_rnn.out
aten::_cudnn_rnn_backward.default aten::_cudnn_rnn_backward.out aten::_cudnn_rnn_flatten_weight.default
aten::_cudnn_rnn_flatten_weight.out aten::_cufft_clear_plan_cache.default
aten::_cufft_get_plan_cache_max_size.default aten::_cufft_get_plan_cache_size.default
aten::_cufft_set_plan_cache_max_size.default aten::_cummax_helper.default aten::_cummin_helper.default
aten::_debug_has_internal_overlap.default aten::_dimI.default aten::_dimV.default aten::_dim_arange.default
aten::_dirichlet_grad.default aten::_dirichlet_grad.out aten::_dyn_quant_matmul_4bit.default
aten::_dyn_quant_pack_4bit_weight.default aten::_efficient_attention_backward.default
aten::_efficient_attention_forward.default aten::_efficientzerotensor.default aten::_efficientzerotensor.out
aten::_embedding_bag.default aten::_embedding_bag.out aten::_embedding_bag_backward.default
aten::_embedding_bag_dense_backward.default aten::_embedding_bag_dense_backward.out
aten::_embedding_bag_forward_only.default aten::_embedding_bag_forward_only.out
aten::_embedding_bag_per_sample_weights_backward.default aten::_embedding_bag_per_sample_weights_backward.out
aten::_embedding_bag_sparse_backward.default aten::_empty_affine_quantized.default
aten::_empty_affine_quantized.out aten::_empty_per_channel_affine_quantized.default
aten::_empty_per_channel_affine_quantized.out aten::_euclidean_dist.default aten::_euclidean_dist.out
aten::_fake_quantize_learnable_per_channel_affine.default
aten::_fake_quantize_learnable_per_channel_affine.out
aten::_fake_quantize_learnable_per_channel_affine_backward.default
aten::_fake_quantize_learnable_per_tensor_affine.default aten::_fake_quantize_learnable_per_tensor_affine.out
aten::_fake_quantize_learnable_per_tensor_affine_backward.default
aten::_fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default
aten::_fake_quantize_per_tensor_affine_cachemask_tensor_qparams.out aten::_fft_c2c.default aten::_fft_c2c.out
aten::_fft_c2r.default aten::_fft_c2r.out aten::_fft_r2c.default aten::_fft_r2c.out
aten::_fill_mem_eff_dropout_mask_.default aten::_flash_attention_backward.default
aten::_flash_attention_forward.default aten::_flash_attention_forward.quantized aten::_foobar.default
aten::_foobar.out aten::_foreach_abs.default aten::_foreach_abs.out aten::_foreach_abs_.default
aten::_foreach_acos.default aten::_foreach_acos.out aten::_foreach_acos_.default aten::_foreach_add.List
aten::_foreach_add.List_out aten::_foreach_add.Scalar aten::_foreach_add.ScalarList
aten::_foreach_add.ScalarList_out aten::_foreach_add.Scalar_out aten::_foreach_add.Tensor
aten::_foreach_add.Tensor_out aten::_foreach_add_.List aten::_foreach_add_.Scalar
aten::_foreach_add_.ScalarList aten::_foreach_add_.Tensor aten::_foreach_addcdiv.Scalar
aten::_foreach_addcdiv.ScalarList aten::_foreach_addcdiv.ScalarList_out aten::_foreach_addcdiv.Scalar_out
aten::_foreach_addcdiv.Tensor aten::_foreach_addcdiv.Tensor_out aten::_foreach_addcdiv_.Scalar
aten::_foreach_addcdiv_.ScalarList aten::_foreach_addcdiv_.Tensor aten::_foreach_addcmul.Scalar
aten::_foreach_addcmul.ScalarList aten::_foreach_addcmul.ScalarList_out aten::_foreach_addcmul.Scalar_out
aten::_foreach_addcmul.Tensor aten::_foreach_addcmul.Tensor_out aten::_foreach_addcmul_.Scalar
aten::_foreach_addcmul_.ScalarList aten::_foreach_addcmul_.Tensor aten::_foreach_asin.default
aten::_foreach_asin.out aten::_foreach_asin_.default aten::_foreach_atan.default aten::_foreach_atan.out
aten::_foreach_atan_.default aten::_foreach_ceil.default aten::_foreach_ceil.out aten::_foreach_ceil_.default
aten::_foreach_clamp_max.List aten::_foreach_clamp_max.List_out aten::_foreach_clamp_max.Scalar
aten::_foreach_clamp_max.ScalarList aten::_foreach_clamp_max.ScalarList_out
aten::_foreach_clamp_max.Scalar_out aten::_foreach_clamp_max_.List aten::_foreach_clamp_max_.Scalar
aten::_foreach_clamp_max_.ScalarList aten::_foreach_clamp_min.List aten::_foreach_clamp_min.List_out
aten::_foreach_clamp_min.Scalar aten::_foreach_clamp_min.ScalarList aten::_foreach_clamp_min.ScalarList_out
aten::_foreach_clamp_min.Scalar_out aten::_foreach_clamp_min_.List aten::_foreach_clamp_min_.Scalar
aten::_foreach_clamp_min_.ScalarList aten::_foreach_copy.default aten::_foreach_copy.out
aten::_foreach_copy_.default aten::_foreach_cos.default aten::_foreach_cos.out aten::_foreach_cos_.default
aten::_foreach_cosh.default aten::_foreach_cosh.out aten::_foreach_cosh_.default aten::_foreach_div.List
aten::_foreach_div.List_out aten::_foreach_div.Scalar aten::_foreach_div.ScalarList
aten::_foreach_div.ScalarList_out aten::_foreach_div.Scalar_out aten::_foreach_div.Tensor
aten::_foreach_div.Tensor_out aten::_foreach_div_.List aten::_foreach_div_.Scalar
aten::_foreach_div_.ScalarList aten::_foreach_div_.Tensor aten::_foreach_erf.default aten::_foreach_erf.out
aten::_foreach_erf_.default aten::_foreach_erfc.default aten::_foreach_erfc.out aten::_foreach_erfc_.default
aten::_foreach_exp.default aten::_foreach_exp.out aten::_foreach_exp_.default aten::_foreach_expm1.default
aten::_foreach_expm1.out aten::_foreach_expm1_.default aten::_foreach_floor.default aten::_foreach_floor.out
aten::_foreach_floor_.default aten::_foreach_frac.default aten::_foreach_frac.out aten::_foreach_frac_.default
aten::_foreach_lerp.List aten::_foreach_lerp.List_out aten::_foreach_lerp.Scalar
aten::_foreach_lerp.ScalarList aten::_foreach_lerp.ScalarList_out aten::_foreach_lerp.Scalar_out
aten::_foreach_lerp_.List aten::_foreach_lerp_.Scalar aten::_foreach_lerp_.ScalarList
aten::_foreach_lgamma.default aten::_foreach_lgamma.out aten::_foreach_lgamma_.default
aten::_foreach_log.default aten::_foreach_log.out aten::_foreach_log10.default aten::_foreach_log10.out
aten::_foreach_log10_.default aten::_foreach_log1p.default aten::_foreach_log1p.out
aten::_foreach_log1p_.default aten::_foreach_log2.default aten::_foreach_log2.out aten::_foreach_log2_.default
aten::_foreach_log_.default aten::_foreach_max.default aten::_foreach_max.out aten::_foreach_maximum.List
aten::_foreach_maximum.List_out aten::_foreach_maximum.Scalar aten::_foreach_maximum.ScalarList
aten::_foreach_maximum.ScalarList_out aten::_foreach_maximum.Scalar_out aten::_foreach_maximum_.List
aten::_foreach_maximum_.Scalar aten::_foreach_maximum_.ScalarList aten::_foreach_minimum.List
aten::_foreach_minimum.List_out aten::_foreach_minimum.Scalar aten::_foreach_minimum.ScalarList
aten::_foreach_minimum.ScalarList_out aten::_foreach_minimum.Scalar_out aten::_foreach_minimum_.List
aten::_foreach_minimum_.Scalar aten::_foreach_minimum_.ScalarList aten::_foreach_mul.List
aten::_foreach_mul.List_out aten::_foreach_mul.Scalar aten::_foreach_mul.ScalarList
aten::_foreach_mul.ScalarList_out aten::_foreach_mul.Scalar_out aten::_foreach_mul.Tensor
aten::_foreach_mul.Tensor_out aten::_foreach_mul_.List aten::_foreach_mul_.Scalar
aten::_foreach_mul_.ScalarList aten::_foreach_mul_.Tensor aten::_foreach_neg.default aten::_foreach_neg.out
aten::_foreach_neg_.default aten::_foreach_norm.Scalar aten::_foreach_norm.Scalar_out aten::_foreach_pow.List
aten::_foreach_pow.List_out aten::_foreach_pow.Scalar aten::_foreach_pow.ScalarAndTensor
aten::_foreach_pow.ScalarList aten::_foreach_pow.ScalarList_out aten::_foreach_pow.Scalar_out
aten::_foreach_pow_.List aten::_foreach_pow_.Scalar aten::_foreach_pow_.ScalarList
aten::_foreach_powsum.Scalar aten::_foreach_powsum.Scalar_out aten::_foreach_reciprocal.default
aten::_foreach_reciprocal.out aten::_foreach_reciprocal_.default aten::_foreach_round.default
aten::_foreach_round.out aten::_foreach_round_.default aten::_foreach_rsqrt.default aten::_foreach_rsqrt.out
aten::_foreach_rsqrt_.default aten::_foreach_sigmoid.default aten::_foreach_sigmoid.out
aten::_foreach_sigmoid_.default aten::_foreach_sign.default aten::_foreach_sign.out
aten::_foreach_sign_.default aten::_foreach_sin.default aten::_foreach_sin.out aten::_foreach_sin_.default
aten::_foreach_sinh.default aten::_foreach_sinh.out aten::_foreach_sinh_.default aten::_foreach_sqrt.default
aten::_foreach_sqrt.out aten::_foreach_sqrt_.default aten::_foreach_sub.List aten::_foreach_sub.List_out
aten::_foreach_sub.Scalar aten::_foreach_sub.ScalarList aten::_foreach_sub.ScalarList_out
aten::_foreach_sub.Scalar_out aten::_foreach_sub_.List aten::_foreach_sub_.Scalar
aten::_foreach_sub_.ScalarList aten::_foreach_tan.default aten::_foreach_tan.out aten::_foreach_tan_.default
aten::_foreach_tanh.default aten::_foreach_tanh.out aten::_foreach_tanh_.default aten::_foreach_trunc.default
aten::_foreach_trunc.out aten::_foreach_trunc_.default aten::_foreach_zero.default aten::_foreach_zero.out
aten::_foreach_zero_.default aten::_functional_assert_async.msg aten::_functional_assert_scalar.default
aten::_functional_sym_constrain_range.default aten::_functional_sym_constrain_range_for_size.default
aten::_fused_adagrad.default aten::_fused_adagrad.out aten::_fused_adagrad.tensor_lr
aten::_fused_adagrad.tensor_lr_out aten::_fused_adagrad_.default aten::_fused_adagrad_.tensor_lr
aten::_fused_adam.default aten::_fused_adam.out aten::_fused_adam.tensor_lr aten::_fused_adam.tensor_lr_out
aten::_fused_adam_.default aten::_fused_adam_.tensor_lr aten::_fused_adamw.default aten::_fused_adamw.out
aten::_fused_adamw.tensor_lr aten::_fused_adamw.tensor_lr_out aten::_fused_adamw_.default
aten::_fused_adamw_.tensor_lr aten::_fused_dropout.default aten::_fused_dropout.out
aten::_fused_moving_avg_obs_fq_helper.default aten::_fused_moving_avg_obs_fq_helper.out
aten::_fused_moving_avg_obs_fq_helper_functional.default aten::_fused_rms_norm.default
aten::_fused_rms_norm_backward.default aten::_fused_sdp_choice.default aten::_fused_sgd.default
aten::_fused_sgd.out aten::_fused_sgd.tensor_lr aten::_fused_sgd.tensor_lr_out aten::_fused_sgd_.default
aten::_fused_sgd_.tensor_lr aten::_fw_primal.default aten::_fw_primal_copy.default aten::_fw_primal_copy.out
aten::_gather_sparse_backward.default aten::_grid_sampler_2d_cpu_fallback.default
aten::_grid_sampler_2d_cpu_fallback.out aten::_grid_sampler_2d_cpu_fallback_backward.default
aten::_grouped_mm.default aten::_has_compatible_shallow_copy_type.default
aten::_has_same_storage_numel.default aten::_histogramdd_bin_edges.default aten::_histogramdd_bin_edges.out
aten::_histogramdd_from_bin_cts.default aten::_histogramdd_from_bin_cts.out
aten::_histogramdd_from_bin_tensors.default aten::_histogramdd_from_bin_tensors.out
aten::_index_put_impl.default aten::_index_put_impl.out aten::_index_put_impl_.default aten::_indices.default
aten::_indices_copy.default aten::_indices_copy.out aten::_int_mm.default aten::_int_mm.out
aten::_is_all_true.default aten::_is_any_true.default aten::_is_zerotensor.default
aten::_jagged_to_padded_dense_forward.default aten::_lazy_clone.default aten::_linalg_check_errors.default
aten::_linalg_det.default aten::_linalg_det.result aten::_linalg_eigh.default aten::_linalg_eigh.eigenvalues
aten::_linalg_eigvals.default aten::_linalg_slogdet.default aten::_linalg_slogdet.sign
aten::_linalg_solve_ex.default aten::_linalg_solve_ex.result aten::_linalg_svd.U aten::_linalg_svd.default
aten::_local_scalar_dense.default aten::_log_softmax.default aten::_log_softmax.out
aten::_log_softmax_backward_data.default aten::_log_softmax_backward_data.out aten::_logcumsumexp.default
aten::_logcumsumexp.out aten::_lstm_mps.default aten::_lstm_mps.out aten::_lu_with_info.default
aten::_make_dep_token.default aten::_make_dual.default aten::_make_dual_copy.default aten::_make_dual_copy.out
aten::_make_per_channel_quantized_tensor.default aten::_make_per_channel_quantized_tensor.out
aten::_make_per_tensor_quantized_tensor.default aten::_make_per_tensor_quantized_tensor.out
aten::_masked_scale.default aten::_masked_scale.out aten::_masked_softmax.default aten::_masked_softmax.out
aten::_masked_softmax_backward.default aten::_masked_softmax_backward.out aten::_mixed_dtypes_linear.default
aten::_mkldnn_reshape.default aten::_mkldnn_reshape.out aten::_mkldnn_transpose.default
aten::_mkldnn_transpose.out aten::_mkldnn_transpose_.default aten::_mps_convolution.default
aten::_mps_convolution.out aten::_mps_convolution_transpose.default aten::_mps_convolution_transpose.out
aten::_native_batch_norm_legit.default aten::_native_batch_norm_legit.no_stats
aten::_native_batch_norm_legit.no_stats_out aten::_native_batch_norm_legit.out
aten::_native_batch_norm_legit_functional.default aten::_native_batch_norm_legit_no_training.default
aten::_native_batch_norm_legit_no_training.out aten::_native_multi_head_attention.default
aten::_native_multi_head_attention.out aten::_neg_view.default aten::_neg_view_copy.default
aten::_neg_view_copy.out aten::_nested_compute_contiguous_strides_offsets.default
aten::_nested_from_padded.default aten::_nested_from_padded.out
aten::_nested_from_padded_and_nested_example.default aten::_nested_from_padded_and_nested_example.out
aten::_nested_from_padded_tensor.default aten::_nested_get_jagged_dummy.default
aten::_nested_get_lengths.default aten::_nested_get_max_seqlen.default aten::_nested_get_min_seqlen.default
aten::_nested_get_offsets.default aten::_nested_get_ragged_idx.default aten::_nested_get_values.default
aten::_nested_get_values_copy.default aten::_nested_get_values_copy.out aten::_nested_select_backward.default
aten::_nested_sum_backward.default aten::_nested_tensor_from_mask.default aten::_nested_tensor_from_mask.out
aten::_nested_tensor_from_mask_left_aligned.default aten::_nested_tensor_from_tensor_list.default
aten::_nested_tensor_from_tensor_list.out aten::_nested_tensor_size.default aten::_nested_tensor_size.out
aten::_nested_tensor_softmax_with_shape.default aten::_nested_tensor_storage_offsets.default
aten::_nested_tensor_storage_offsets.out aten::_nested_tensor_strides.default aten::_nested_tensor_strides.out
aten::_nested_view_from_buffer.default aten::_nested_view_from_buffer_copy.default
aten::_nested_view_from_buffer_copy.out aten::_nested_view_from_jagged.default
aten::_nested_view_from_jagged_copy.default aten::_nested_view_from_jagged_copy.out
aten::_new_zeros_with_same_feature_meta.default aten::_new_zeros_with_same_feature_meta.out
aten::_nnpack_available.default aten::_nnpack_spatial_convolution.default
aten::_nnpack_spatial_convolution.out aten::_nnz.default aten::_pack_padded_sequence.default
aten::_pack_padded_sequence.out aten::_pack_padded_sequence_backward.default aten::_pad_circular.default
aten::_pad_enum.default aten::_pad_packed_sequence.default aten::_padded_dense_to_jagged_forward.default
aten::_pdist_backward.default aten::_pdist_backward.out aten::_pdist_forward.default aten::_pdist_forward.out
aten::_pin_memory.default aten::_pin_memory.out aten::_prelu_kernel.default
aten::_prelu_kernel_backward.default aten::_print.default aten::_propagate_xla_data.default
aten::_remove_batch_dim.default aten::_reshape_alias.default aten::_reshape_alias_copy.default
aten::_reshape_alias_copy.out aten::_reshape_copy.default aten::_reshape_from_tensor.default
aten::_resize_output.default aten::_resize_output.out aten::_resize_output_.default
aten::_rowwise_prune.default aten::_safe_softmax.default aten::_sample_dirichlet.default
aten::_sample_dirichlet.out aten::_saturate_weight_to_fp16.default
aten::_scaled_dot_product_attention_math.default aten::_scaled_dot_product_attention_math_for_mps.default
aten::_scaled_dot_product_cudnn_attention.default aten::_scaled_dot_product_cudnn_attention_backward.default
aten::_scaled_dot_product_efficient_attention.default
aten::_scaled_dot_product_efficient_attention_backward.default
aten::_scaled_dot_product_flash_attention.default aten::_scaled_dot_product_flash_attention.quantized
aten::_scaled_dot_product_flash_attention_backward.default
aten::_scaled_dot_product_flash_attention_for_cpu.default
aten::_scaled_dot_product_flash_attention_for_cpu_backward.default
aten::_scaled_dot_product_fused_attention_overrideable.default
aten::_scaled_dot_product_fused_attention_overrideable_backward.default aten::_scaled_grouped_mm.default
aten::_scaled_grouped_mm_v2.default aten::_scaled_mm.default aten::_scaled_mm.out aten::_scaled_mm_v2.default
aten::_scaled_mm_v2.out aten::_segment_reduce_backward.default aten::_segment_reduce_backward.out
aten::_shape_as_tensor.default aten::_slow_conv2d_backward.grad_input aten::_slow_conv2d_backward.output_mask
aten::_slow_conv2d_backward.output_mask_out aten::_slow_conv2d_forward.default
aten::_slow_conv2d_forward.output aten::_sobol_engine_draw.default aten::_sobol_engine_ff_.default
aten::_sobol_engine_initialize_state_.default aten::_sobol_engine_scramble_.default aten::_softmax.default
aten::_softmax.out aten::_softmax_backward_data.default aten::_softmax_backward_data.out
aten::_sparse_addmm.default aten::_sparse_addmm.out aten::_sparse_broadcast_to.default
aten::_sparse_broadcast_to_copy.default aten::_sparse_broadcast_to_copy.out
aten::_sparse_bsc_tensor_unsafe.default aten::_sparse_bsr_tensor_unsafe.default
aten::_sparse_compressed_tensor_unsafe.default aten::_sparse_compressed_tensor_with_dims.default
aten::_sparse_coo_tensor_unsafe.default aten::_sparse_coo_tensor_with_dims.default
aten::_sparse_coo_tensor_with_dims.out aten::_sparse_coo_tensor_with_dims_and_tensors.default
aten::_sparse_coo_tensor_with_dims_and_tensors.out aten::_sparse_csc_tensor_unsafe.default
aten::_sparse_csr_prod.dim_dtype aten::_sparse_csr_prod.dim_dtype_out aten::_sparse_csr_sum.dim_dtype
aten::_sparse_csr_sum.dim_dtype_out aten::_sparse_csr_tensor_unsafe.default aten::_sparse_log_softmax.Dimname
aten::_sparse_log_softmax.default aten::_sparse_log_softmax.int aten::_sparse_log_softmax.out
aten::_sparse_log_softmax_backward_data.default aten::_sparse_log_softmax_backward_data.out
aten::_sparse_mask_projection.default aten::_sparse_mask_projection.out aten::_sparse_mm.default
aten::_sparse_mm.reduce aten::_sparse_mm_reduce_impl.default aten::_sparse_mm_reduce_impl_backward.default
aten::_sparse_semi_structured_addmm.default aten::_sparse_semi_structured_apply.default
aten::_sparse_semi_structured_apply_dense.default aten::_sparse_semi_structured_linear.default
aten::_sparse_semi_structured_mm.default aten::_sparse_semi_structured_tile.default
aten::_sparse_softmax.Dimname aten::_sparse_softmax.default aten::_sparse_softmax.int
aten::_sparse_softmax.out aten::_sparse_softmax_backward_data.default aten::_sparse_softmax_backward_data.out
aten::_sparse_sparse_matmul.default aten::_sparse_sparse_matmul.out aten::_sparse_sum.default
aten::_sparse_sum.dim aten::_sparse_sum.dim_dtype aten::_sparse_sum.dim_out aten::_sparse_sum.dtype
aten::_sparse_sum_backward.default aten::_sparse_sum_backward.out aten::_spdiags.default aten::_spdiags.out
aten::_spsolve.default aten::_stack.default aten::_stack.out aten::_standard_gamma.default
aten::_standard_gamma.out aten::_standard_gamma_grad.default aten::_standard_gamma_grad.out
aten::_test_ambiguous_defaults.a aten::_test_ambiguous_defaults.b
aten::_test_autograd_multiple_dispatch.fullcoverage aten::_test_autograd_multiple_dispatch.fullcoverage_out
aten::_test_autograd_multiple_dispatch.ntonly aten::_test_autograd_multiple_dispatch_view.default
aten::_test_autograd_multiple_dispatch_view_copy.default aten::_test_autograd_multiple_dispatch_view_copy.out
aten::_test_check_tensor.default aten::_test_functorch_fallback.default aten::_test_functorch_fallback.out
aten::_test_optional_filled_intlist.default aten::_test_optional_filled_intlist.out
aten::_test_optional_floatlist.default aten::_test_optional_floatlist.out aten::_test_optional_intlist.default
aten::_test_optional_intlist.out aten::_test_parallel_materialize.default
aten::_test_serialization_subcmul.default aten::_test_string_default.default
aten::_test_warn_in_autograd.default aten::_test_warn_in_autograd.out
aten::_thnn_differentiable_gru_cell_backward.default aten::_thnn_differentiable_lstm_cell_backward.default
aten::_thnn_fused_gru_cell.default aten::_thnn_fused_gru_cell.out aten::_thnn_fused_gru_cell_backward.default
aten::_thnn_fused_gru_cell_backward.out aten::_thnn_fused_lstm_cell.default aten::_thnn_fused_lstm_cell.out
aten::_thnn_fused_lstm_cell_backward.default aten::_thnn_fused_lstm_cell_backward_impl.default
aten::_thnn_fused_lstm_cell_backward_impl.out aten::_to_copy.default aten::_to_copy.out aten::_to_cpu.default
aten::_to_dense.default aten::_to_dense.out aten::_to_sparse.default aten::_to_sparse.out
aten::_to_sparse.sparse_dim aten::_to_sparse.sparse_dim_out aten::_to_sparse_bsc.default
aten::_to_sparse_bsc.out aten::_to_sparse_bsr.default aten::_to_sparse_bsr.out aten::_to_sparse_csc.default
aten::_to_sparse_csc.out aten::_to_sparse_csr.default aten::_to_sparse_csr.out
aten::_to_sparse_semi_structured.default aten::_transform_bias_rescale_qkv.default
aten::_transform_bias_rescale_qkv.out aten::_transformer_encoder_layer_fwd.default
aten::_transformer_encoder_layer_fwd.out aten::_trilinear.default aten::_trilinear.out
aten::_triton_multi_head_attention.default aten::_triton_multi_head_attention.out
aten::_triton_scaled_dot_attention.default aten::_triton_scaled_dot_attention.out aten::_unique.default
aten::_unique.out aten::_unique2.default aten::_unique2.out aten::_unpack_dual.default
aten::_unsafe_index.Tensor aten::_unsafe_index_put.default aten::_unsafe_masked_index.default
aten::_unsafe_masked_index_put_accumulate.default aten::_unsafe_view.default aten::_unsafe_view.out
aten::_upsample_bicubic2d_aa.default aten::_upsample_bicubic2d_aa.out aten::_upsample_bicubic2d_aa.vec
aten::_upsample_bicubic2d_aa_backward.default aten::_upsample_bicubic2d_aa_backward.grad_input
aten::_upsample_bilinear2d_aa.default aten::_upsample_bilinear2d_aa.out aten::_upsample_bilinear2d_aa.vec
aten::_upsample_bilinear2d_aa_backward.default aten::_upsample_bilinear2d_aa_backward.grad_input
aten::_upsample_nearest_exact1d.default aten::_upsample_nearest_exact1d.out
aten::_upsample_nearest_exact1d.vec aten::_upsample_nearest_exact1d_backward.default
aten::_upsample_nearest_exact1d_backward.grad_input aten::_upsample_nearest_exact2d.default
aten::_upsample_nearest_exact2d.out aten::_upsample_nearest_exact2d.vec
aten::_upsample_nearest_exact2d_backward.default aten::_upsample_nearest_exact2d_backward.grad_input
aten::_upsample_nearest_exact3d.default aten::_upsample_nearest_exact3d.out
aten::_upsample_nearest_exact3d.vec aten::_upsample_nearest_exact3d_backward.default
aten::_upsample_nearest_exact3d_backward.grad_input aten::_use_cudnn_ctc_loss.Tensor
aten::_use_cudnn_ctc_loss.default aten::_use_cudnn_rnn_flatten_weight.default
aten::_use_miopen_ctc_loss.Tensor aten::_use_miopen_ctc_loss.default
aten::_validate_compressed_sparse_indices.default aten::_validate_sparse_bsc_tensor_args.default
aten::_validate_sparse_bsr_tensor_args.default aten::_validate_sparse_compressed_tensor_args.default
aten::_validate_sparse_coo_tensor_args.default aten::_validate_sparse_csc_tensor_args.default
aten::_validate_sparse_csr_tensor_args.default aten::_values.default aten::_values_copy.default
aten::_values_copy.out aten::_version.default aten::_weight_int4pack_mm.default
aten::_weight_int4pack_mm_for_cpu.default aten::_weight_int4pack_mm_with_scales_and_zeros.default
aten::_weight_int8pack_mm.default aten::_weight_norm.default
aten::_weight_norm_differentiable_backward.default aten::_weight_norm_interface.default
aten::_weight_norm_interface.out aten::_weight_norm_interface_backward.default
aten::_weight_norm_interface_backward.out aten::_wrapped_linear_prepack.default
aten::_wrapped_quantized_linear_prepacked.default aten::abs.default aten::abs.out aten::abs_.default
aten::absolute.default aten::absolute.out aten::absolute_.default aten::acos.default aten::acos.out
aten::acos_.default aten::acosh.default aten::acosh.out aten::acosh_.default aten::adaptive_avg_pool1d.default
aten::adaptive_avg_pool1d.out aten::adaptive_avg_pool2d.default aten::adaptive_avg_pool2d.out
aten::adaptive_avg_pool3d.default aten::adaptive_avg_pool3d.out aten::adaptive_avg_pool3d_backward.grad_input
aten::adaptive_max_pool1d.default aten::adaptive_max_pool2d.default aten::adaptive_max_pool2d.out
aten::adaptive_max_pool2d_backward.default aten::adaptive_max_pool2d_backward.grad_input
aten::adaptive_max_pool3d.default aten::adaptive_max_pool3d.out aten::adaptive_max_pool3d_backward.default
aten::adaptive_max_pool3d_backward.grad_input aten::add.Scalar aten::add.Scalar_out aten::add.Tensor
aten::add.out aten::add_.Scalar aten::add_.Tensor aten::addbmm.default aten::addbmm.out aten::addbmm_.default
aten::addcdiv.default aten::addcdiv.out aten::addcdiv_.default aten::addcmul.default aten::addcmul.out
aten::addcmul_.default aten::addmm.default aten::addmm.dtype aten::addmm.dtype_out aten::addmm.out
aten::addmm_.default aten::addmv.default aten::addmv.out aten::addmv_.default aten::addr.default
aten::addr.out aten::addr_.default aten::adjoint.default aten::affine_grid_generator.default
aten::affine_grid_generator.out aten::affine_grid_generator_backward.default aten::alias.default
aten::alias_copy.default aten::alias_copy.out aten::align_as.default aten::align_tensors.default
aten::align_to.default aten::align_to.ellipsis_idx aten::all.all_out aten::all.default aten::all.dim
aten::all.dimname aten::all.dimname_out aten::all.dims aten::all.dims_out aten::all.out aten::allclose.default
aten::alpha_dropout.default aten::alpha_dropout_.default aten::amax.default aten::amax.out aten::amin.default
aten::amin.out aten::aminmax.default aten::aminmax.out aten::angle.default aten::angle.out aten::any.all_out
aten::any.default aten::any.dim aten::any.dimname aten::any.dimname_out aten::any.dims aten::any.dims_out
aten::any.out aten::arange.default aten::arange.out aten::arange.start aten::arange.start_out
aten::arange.start_step aten::arccos.default aten::arccos.out aten::arccos_.default aten::arccosh.default
aten::arccosh.out aten::arccosh_.default aten::arcsin.default aten::arcsin.out aten::arcsin_.default
aten::arcsinh.default aten::arcsinh.out aten::arcsinh_.default aten::arctan.default aten::arctan.out
aten::arctan2.default aten::arctan2.out aten::arctan2_.default aten::arctan_.default aten::arctanh.default
aten::arctanh.out aten::arctanh_.default aten::argmax.default aten::argmax.out aten::argmin.default
aten::argmin.out aten::argsort.default aten::argsort.dimname aten::argsort.stable aten::argsort.stable_out
aten::argwhere.default aten::as_strided.default aten::as_strided_.default aten::as_strided_copy.default
aten::as_strided_copy.out aten::as_strided_scatter.default aten::as_strided_scatter.out aten::asin.default
aten::asin.out aten::asin_.default aten::asinh.default aten::asinh.out aten::asinh_.default aten::atan.default
aten::atan.out aten::atan2.default aten::atan2.out aten::atan2_.default aten::atan_.default
aten::atanh.default aten::atanh.out aten::atanh_.default aten::atleast_1d.Sequence aten::atleast_1d.default
aten::atleast_2d.Sequence aten::atleast_2d.default aten::atleast_3d.Sequence aten::atleast_3d.default
aten::avg_pool1d.default aten::avg_pool1d.out aten::avg_pool2d.default aten::avg_pool2d.out
aten::avg_pool2d_backward.default aten::avg_pool2d_backward.grad_input aten::avg_pool3d.default
aten::avg_pool3d.out aten::avg_pool3d_backward.default aten::avg_pool3d_backward.grad_input
aten::baddbmm.default aten::baddbmm.dtype aten::baddbmm.dtype_out aten::baddbmm.out aten::baddbmm_.default
aten::bartlett_window.default aten::bartlett_window.out aten::bartlett_window.periodic
aten::bartlett_window.periodic_out aten::batch_norm.default aten::batch_norm_backward.default
aten::batch_norm_backward_elemt.default aten::batch_norm_backward_elemt.out
aten::batch_norm_backward_reduce.default aten::batch_norm_backward_reduce.out aten::batch_norm_elemt.default
aten::batch_norm_elemt.out aten::batch_norm_gather_stats.default aten::batch_norm_gather_stats.out
aten::batch_norm_gather_stats_with_counts.default aten::batch_norm_gather_stats_with_counts.out
aten::batch_norm_stats.default aten::batch_norm_stats.out aten::batch_norm_update_stats.default
aten::batch_norm_update_stats.out aten::bernoulli.Tensor aten::bernoulli.Tensor_out aten::bernoulli.default
aten::bernoulli.float_out aten::bernoulli.out aten::bernoulli.p aten::bernoulli_.Tensor aten::bernoulli_.float
aten::bilinear.default aten::binary_cross_entropy.default aten::binary_cross_entropy.out
aten::binary_cross_entropy_backward.default aten::binary_cross_entropy_backward.grad_input
aten::binary_cross_entropy_with_logits.default aten::binary_cross_entropy_with_logits.out
aten::bincount.default aten::bincount.out aten::binomial.default aten::binomial.out aten::bitwise_and.Scalar
aten::bitwise_and.Scalar_Tensor aten::bitwise_and.Scalar_Tensor_out aten::bitwise_and.Scalar_out
aten::bitwise_and.Tensor aten::bitwise_and.Tensor_out aten::bitwise_and_.Scalar aten::bitwise_and_.Tensor
aten::bitwise_left_shift.Scalar_Tensor aten::bitwise_left_shift.Scalar_Tensor_out
aten::bitwise_left_shift.Tensor aten::bitwise_left_shift.Tensor_Scalar
aten::bitwise_left_shift.Tensor_Scalar_out aten::bitwise_left_shift.Tensor_out
aten::bitwise_left_shift_.Tensor aten::bitwise_left_shift_.Tensor_Scalar aten::bitwise_not.default
aten::bitwise_not.out aten::bitwise_not_.default aten::bitwise_or.Scalar aten::bitwise_or.Scalar_Tensor
aten::bitwise_or.Scalar_Tensor_out aten::bitwise_or.Scalar_out aten::bitwise_or.Tensor
aten::bitwise_or.Tensor_out aten::bitwise_or_.Scalar aten::bitwise_or_.Tensor
aten::bitwise_right_shift.Scalar_Tensor aten::bitwise_right_shift.Scalar_Tensor_out
aten::bitwise_right_shift.Tensor aten::bitwise_right_shift.Tensor_Scalar
aten::bitwise_right_shift.Tensor_Scalar_out aten::bitwise_right_shift.Tensor_out
aten::bitwise_right_shift_.Tensor aten::bitwise_right_shift_.Tensor_Scalar aten::bitwise_xor.Scalar
aten::bitwise_xor.Scalar_Tensor aten::bitwise_xor.Scalar_Tensor_out aten::bitwise_xor.Scalar_out
aten::bitwise_xor.Tensor aten::bitwise_xor.Tensor_out aten::bitwise_xor_.Scalar aten::bitwise_xor_.Tensor
aten::blackman_window.default aten::blackman_window.out aten::blackman_window.periodic
aten::blackman_window.periodic_out aten::block_diag.default aten::block_diag.out aten::bmm.default
aten::bmm.dtype aten::bmm.dtype_out aten::bmm.out aten::broadcast_tensors.default aten::broadcast_to.default
aten::bucketize.Scalar aten::bucketize.Scalar_out aten::bucketize.Tensor aten::bucketize.Tensor_out
aten::can_cast.default aten::cartesian_prod.default aten::cat.default aten::cat.names aten::cat.names_out
aten::cat.out aten::cauchy.default aten::cauchy.out aten::cauchy_.default aten::ccol_indices.default
aten::ccol_indices_copy.default aten::ccol_indices_copy.out aten::cdist.default aten::ceil.default
aten::ceil.out aten::ceil_.default aten::celu.default aten::celu.out aten::celu_.default
aten::chain_matmul.default aten::chain_matmul.out aten::chalf.default aten::channel_shuffle.default
aten::channel_shuffle.out aten::cholesky.default aten::cholesky.out aten::cholesky_inverse.default
aten::cholesky_inverse.out aten::cholesky_solve.default aten::cholesky_solve.out
aten::choose_qparams_optimized.default aten::chunk.default aten::clamp.Tensor aten::clamp.Tensor_out
aten::clamp.default aten::clamp.out aten::clamp_.Tensor aten::clamp_.default aten::clamp_max.Tensor
aten::clamp_max.Tensor_out aten::clamp_max.default aten::clamp_max.out aten::clamp_max_.Tensor
aten::clamp_max_.default aten::clamp_min.Tensor aten::clamp_min.Tensor_out aten::clamp_min.default
aten::clamp_min.out aten::clamp_min_.Tensor aten::clamp_min_.default aten::clip.Tensor aten::clip.Tensor_out
aten::clip.default aten::clip.out aten::clip_.Tensor aten::clip_.default aten::clone.default aten::clone.out
aten::coalesce.default aten::col2im.default aten::col2im.out aten::col_indices.default
aten::col_indices_copy.default aten::col_indices_copy.out aten::column_stack.default aten::column_stack.out
aten::combinations.default aten::complex.default aten::complex.out aten::concat.default aten::concat.names
aten::concat.names_out aten::concat.out aten::concatenate.default aten::concatenate.names
aten::concatenate.names_out aten::concatenate.out aten::conj.default aten::conj_physical.default
aten::conj_physical.out aten::conj_physical_.default aten::constant_pad_nd.default aten::constant_pad_nd.out
aten::contiguous.default aten::conv1d.default aten::conv1d.padding aten::conv2d.default aten::conv2d.padding
aten::conv3d.default aten::conv3d.padding aten::conv_depthwise3d.default aten::conv_depthwise3d.out
aten::conv_tbc.default aten::conv_tbc.out aten::conv_tbc_backward.default aten::conv_transpose1d.default
aten::conv_transpose2d.input aten::conv_transpose3d.input aten::convolution.default aten::convolution.out
aten::convolution_backward.default aten::convolution_backward.out
aten::convolution_backward_overrideable.default aten::convolution_backward_overrideable.out
aten::convolution_overrideable.default aten::convolution_overrideable.out aten::copy.default aten::copy.out
aten::copy_.default aten::copy_sparse_to_sparse.default aten::copy_sparse_to_sparse.out
aten::copy_sparse_to_sparse_.default aten::copysign.Scalar aten::copysign.Scalar_out aten::copysign.Tensor
aten::copysign.out aten::copysign_.Scalar aten::copysign_.Tensor aten::corrcoef.default aten::cos.default
aten::cos.out aten::cos_.default aten::cosh.default aten::cosh.out aten::cosh_.default
aten::cosine_embedding_loss.default aten::cosine_similarity.default aten::count_nonzero.default
aten::count_nonzero.dim_IntList aten::count_nonzero.dim_IntList_out aten::count_nonzero.out aten::cov.default
aten::cross.default aten::cross.out aten::cross_entropy_loss.default aten::crow_indices.default
aten::crow_indices_copy.default aten::crow_indices_copy.out aten::ctc_loss.IntList aten::ctc_loss.Tensor
aten::cudnn_affine_grid_generator.default aten::cudnn_affine_grid_generator.out
aten::cudnn_affine_grid_generator_backward.default aten::cudnn_affine_grid_generator_backward.out
aten::cudnn_batch_norm.default aten::cudnn_batch_norm.out aten::cudnn_batch_norm_backward.default
aten::cudnn_batch_norm_backward.out aten::cudnn_convolution.default aten::cudnn_convolution.out
aten::cudnn_convolution_add_relu.default aten::cudnn_convolution_add_relu.out
aten::cudnn_convolution_relu.default aten::cudnn_convolution_relu.out
aten::cudnn_convolution_transpose.default aten::cudnn_convolution_transpose.out
aten::cudnn_grid_sampler.default aten::cudnn_grid_sampler.out aten::cudnn_grid_sampler_backward.default
aten::cudnn_grid_sampler_backward.out aten::cudnn_is_acceptable.default aten::cummax.default
aten::cummax.dimname aten::cummax.dimname_out aten::cummax.out aten::cummaxmin_backward.default
aten::cummin.default aten::cummin.dimname aten::cummin.dimname_out aten::cummin.out aten::cumprod.default
aten::cumprod.dimname aten::cumprod.dimname_out aten::cumprod.out aten::cumprod_.default
aten::cumprod_.dimname aten::cumprod_backward.default aten::cumsum.default aten::cumsum.dimname
aten::cumsum.dimname_out aten::cumsum.out aten::cumsum_.default aten::cumsum_.dimname
aten::cumulative_trapezoid.dx aten::cumulative_trapezoid.x aten::data.default aten::deg2rad.default
aten::deg2rad.out aten::deg2rad_.default aten::dense_dim.default aten::dequantize.self
aten::dequantize.self_out aten::dequantize.tensors aten::dequantize.tensors_out aten::det.default
aten::detach.default aten::detach_.default aten::detach_copy.default aten::detach_copy.out aten::diag.default
aten::diag.out aten::diag_embed.default aten::diag_embed.out aten::diagflat.default aten::diagonal.Dimname
aten::diagonal.default aten::diagonal_backward.default aten::diagonal_backward.out aten::diagonal_copy.default
aten::diagonal_copy.out aten::diagonal_scatter.default aten::diagonal_scatter.out aten::diff.default
aten::diff.out aten::digamma.default aten::digamma.out aten::digamma_.default aten::dist.default
aten::dist.out aten::div.Scalar aten::div.Scalar_mode aten::div.Scalar_mode_out aten::div.Scalar_out
aten::div.Tensor aten::div.Tensor_mode aten::div.out aten::div.out_mode aten::div_.Scalar
aten::div_.Scalar_mode aten::div_.Tensor aten::div_.Tensor_mode aten::divide.Scalar aten::divide.Scalar_mode
aten::divide.Tensor aten::divide.Tensor_mode aten::divide.out aten::divide.out_mode aten::divide_.Scalar
aten::divide_.Scalar_mode aten::divide_.Tensor aten::divide_.Tensor_mode aten::dot.default aten::dot.out
aten::dropout.default aten::dropout_.default aten::dsplit.array aten::dsplit.int aten::dstack.default
aten::dstack.out aten::einsum.default aten::elu.default aten::elu.out aten::elu_.default
aten::elu_backward.default aten::elu_backward.grad_input aten::embedding.default aten::embedding.out
aten::embedding_backward.default aten::embedding_bag.default aten::embedding_bag.padding_idx
aten::embedding_dense_backward.default aten::embedding_dense_backward.out aten::embedding_renorm.default
aten::embedding_renorm.out aten::embedding_renorm_.default aten::embedding_sparse_backward.default
aten::empty.memory_format aten::empty.names aten::empty.names_out aten::empty.out aten::empty_like.default
aten::empty_like.out aten::empty_permuted.default aten::empty_permuted.out aten::empty_quantized.default
aten::empty_quantized.out aten::empty_strided.default aten::empty_strided.out aten::eq.Scalar
aten::eq.Scalar_out aten::eq.Tensor aten::eq.Tensor_out aten::eq_.Scalar aten::eq_.Tensor aten::equal.default
aten::erf.default aten::erf.out aten::erf_.default aten::erfc.default aten::erfc.out aten::erfc_.default
aten::erfinv.default aten::erfinv.out aten::erfinv_.default aten::exp.default aten::exp.out aten::exp2.default
aten::exp2.out aten::exp2_.default aten::exp_.default aten::expand.default aten::expand_as.default
aten::expand_copy.default aten::expand_copy.out aten::expm1.default aten::expm1.out aten::expm1_.default
aten::exponential.default aten::exponential.out aten::exponential_.default aten::eye.default aten::eye.m
aten::eye.m_out aten::eye.out aten::fake_quantize_per_channel_affine.default
aten::fake_quantize_per_channel_affine_cachemask.default aten::fake_quantize_per_channel_affine_cachemask.out
aten::fake_quantize_per_channel_affine_cachemask_backward.default
aten::fake_quantize_per_tensor_affine.default aten::fake_quantize_per_tensor_affine.tensor_qparams
aten::fake_quantize_per_tensor_affine_cachemask.default aten::fake_quantize_per_tensor_affine_cachemask.out
aten::fake_quantize_per_tensor_affine_cachemask_backward.default aten::fbgemm_linear_fp16_weight.default
aten::fbgemm_linear_fp16_weight.out aten::fbgemm_linear_fp16_weight_fp32_activation.default
aten::fbgemm_linear_fp16_weight_fp32_activation.out aten::fbgemm_linear_int8_weight.default
aten::fbgemm_linear_int8_weight_fp32_activation.default aten::fbgemm_linear_quantize_weight.default
aten::fbgemm_pack_gemm_matrix_fp16.default aten::fbgemm_pack_quantized_matrix.KN
aten::fbgemm_pack_quantized_matrix.default aten::feature_alpha_dropout.default
aten::feature_alpha_dropout_.default aten::feature_dropout.default aten::feature_dropout_.default
aten::fft_fft.default aten::fft_fft.out aten::fft_fft2.default aten::fft_fft2.out aten::fft_fftfreq.default
aten::fft_fftfreq.out aten::fft_fftn.default aten::fft_fftn.out aten::fft_fftshift.default
aten::fft_hfft.default aten::fft_hfft.out aten::fft_hfft2.default aten::fft_hfft2.out aten::fft_hfftn.default
aten::fft_hfftn.out aten::fft_ifft.default aten::fft_ifft.out aten::fft_ifft2.default aten::fft_ifft2.out
aten::fft_ifftn.default aten::fft_ifftn.out aten::fft_ifftshift.default aten::fft_ihfft.default
aten::fft_ihfft.out aten::fft_ihfft2.default aten::fft_ihfft2.out aten::fft_ihfftn.default
aten::fft_ihfftn.out aten::fft_irfft.default aten::fft_irfft.out aten::fft_irfft2.default aten::fft_irfft2.out
aten::fft_irfftn.default aten::fft_irfftn.out aten::fft_rfft.default aten::fft_rfft.out
aten::fft_rfft2.default aten::fft_rfft2.out aten::fft_rfftfreq.default aten::fft_rfftfreq.out
aten::fft_rfftn.default aten::fft_rfftn.out aten::fill.Scalar aten::fill.Scalar_out aten::fill.Tensor
aten::fill.Tensor_out aten::fill_.Scalar aten::fill_.Tensor aten::fill_diagonal_.default aten::fix.default
aten::fix.out aten::fix_.default aten::flatten.DimnameList aten::flatten.named_out_dim
aten::flatten.using_ints aten::flatten.using_names aten::flatten_dense_tensors.default aten::flip.default
aten::flip.out aten::fliplr.default aten::flipud.default aten::float_power.Scalar aten::float_power.Scalar_out
aten::float_power.Tensor_Scalar aten::float_power.Tensor_Scalar_out aten::float_power.Tensor_Tensor
aten::float_power.Tensor_Tensor_out aten::float_power_.Scalar aten::float_power_.Tensor aten::floor.default
aten::floor.out aten::floor_.default aten::floor_divide.Scalar aten::floor_divide.Scalar_out
aten::floor_divide.default aten::floor_divide.out aten::floor_divide_.Scalar aten::floor_divide_.Tensor
aten::fmax.default aten::fmax.out aten::fmin.default aten::fmin.out aten::fmod.Scalar aten::fmod.Scalar_out
aten::fmod.Tensor aten::fmod.Tensor_out aten::fmod_.Scalar aten::fmod_.Tensor aten::frac.default
aten::frac.out aten::frac_.default aten::fractional_max_pool2d.default aten::fractional_max_pool2d.output
aten::fractional_max_pool2d_backward.default aten::fractional_max_pool2d_backward.grad_input
aten::fractional_max_pool3d.default aten::fractional_max_pool3d.output
aten::fractional_max_pool3d_backward.default aten::fractional_max_pool3d_backward.grad_input
aten::frexp.Tensor aten::frexp.Tensor_out aten::frobenius_norm.dim aten::frobenius_norm.out
aten::from_file.default aten::from_file.out aten::full.default aten::full.names aten::full.names_out
aten::full.out aten::full_like.default aten::full_like.out aten::fused_moving_avg_obs_fake_quant.default
aten::gather.default aten::gather.dimname aten::gather.dimname_out aten::gather.out
aten::gather_backward.default aten::gcd.default aten::gcd.out aten::gcd_.default aten::ge.Scalar
aten::ge.Scalar_out aten::ge.Tensor aten::ge.Tensor_out aten::ge_.Scalar aten::ge_.Tensor aten::gelu.default
aten::gelu.out aten::gelu_.default aten::gelu_backward.default aten::gelu_backward.grad_input
aten::geometric.default aten::geometric.out aten::geometric_.default aten::geqrf.a aten::geqrf.default
aten::ger.default aten::ger.out aten::glu.default aten::glu.out aten::glu_backward.default
aten::glu_backward.grad_input aten::glu_backward_jvp.default aten::glu_backward_jvp.out aten::glu_jvp.default
aten::glu_jvp.out aten::gradient.array aten::gradient.scalararray aten::gradient.scalarint
aten::gradient.scalarrayarray aten::gradient.scalarrayint aten::gradient.tensorarray
aten::gradient.tensorarrayint aten::greater.Scalar aten::greater.Scalar_out aten::greater.Tensor
aten::greater.Tensor_out aten::greater_.Scalar aten::greater_.Tensor aten::greater_equal.Scalar
aten::greater_equal.Scalar_out aten::greater_equal.Tensor aten::greater_equal.Tensor_out
aten::greater_equal_.Scalar aten::greater_equal_.Tensor aten::grid_sampler.default
aten::grid_sampler_2d.default aten::grid_sampler_2d.out aten::grid_sampler_2d_backward.default
aten::grid_sampler_2d_backward.out aten::grid_sampler_3d.default aten::grid_sampler_3d.out
aten::grid_sampler_3d_backward.default aten::grid_sampler_3d_backward.out aten::group_norm.default
aten::gru.data aten::gru.input aten::gru_cell.default aten::gt.Scalar aten::gt.Scalar_out aten::gt.Tensor
aten::gt.Tensor_out aten::gt_.Scalar aten::gt_.Tensor aten::hamming_window.default aten::hamming_window.out
aten::hamming_window.periodic aten::hamming_window.periodic_alpha aten::hamming_window.periodic_alpha_beta
aten::hamming_window.periodic_alpha_beta_out aten::hamming_window.periodic_alpha_out
aten::hamming_window.periodic_out aten::hann_window.default aten::hann_window.out aten::hann_window.periodic
aten::hann_window.periodic_out aten::hardshrink.default aten::hardshrink.out aten::hardshrink_backward.default
aten::hardshrink_backward.grad_input aten::hardsigmoid.default aten::hardsigmoid.out
aten::hardsigmoid_.default aten::hardsigmoid_backward.default aten::hardsigmoid_backward.grad_input
aten::hardswish.default aten::hardswish.out aten::hardswish_.default aten::hardswish_backward.default
aten::hardswish_backward.out aten::hardtanh.default aten::hardtanh.out aten::hardtanh_.default
aten::hardtanh_backward.default aten::hardtanh_backward.grad_input aten::hash_tensor.default
aten::hash_tensor.out aten::heaviside.default aten::heaviside.out aten::heaviside_.default
aten::hinge_embedding_loss.default aten::histc.default aten::histc.out aten::histogram.bin_ct
aten::histogram.bin_ct_out aten::histogram.bins_tensor aten::histogram.bins_tensor_out
aten::histogramdd.TensorList_bins aten::histogramdd.default aten::histogramdd.int_bins aten::hsplit.array
aten::hsplit.int aten::hspmm.default aten::hspmm.out aten::hstack.default aten::hstack.out
aten::huber_loss.default aten::huber_loss.out aten::huber_loss_backward.default aten::huber_loss_backward.out
aten::hypot.default aten::hypot.out aten::hypot_.default aten::i0.default aten::i0.out aten::i0_.default
aten::igamma.default aten::igamma.out aten::igamma_.default aten::igammac.default aten::igammac.out
aten::igammac_.default aten::im2col.default aten::im2col.out aten::imag.default aten::index.Tensor
aten::index.Tensor_out aten::index_add.default aten::index_add.dimname aten::index_add.out
aten::index_add_.default aten::index_copy.default aten::index_copy.dimname aten::index_copy.out
aten::index_copy_.default aten::index_copy_.dimname aten::index_fill.Dimname_Scalar
aten::index_fill.Dimname_Tensor aten::index_fill.int_Scalar aten::index_fill.int_Scalar_out
aten::index_fill.int_Tensor aten::index_fill.int_Tensor_out aten::index_fill_.Dimname_Scalar
aten::index_fill_.Dimname_Tensor aten::index_fill_.int_Scalar aten::index_fill_.int_Tensor
aten::index_put.default aten::index_put.out aten::index_put_.default aten::index_reduce.default
aten::index_reduce.out aten::index_reduce_.default aten::index_select.default aten::index_select.dimname
aten::index_select.dimname_out aten::index_select.out aten::index_select_backward.default
aten::indices.default aten::indices_copy.default aten::indices_copy.out
aten::infinitely_differentiable_gelu_backward.default aten::inner.default aten::inner.out
aten::instance_norm.default aten::int_repr.default aten::int_repr.out aten::inverse.default aten::inverse.out
aten::is_coalesced.default aten::is_complex.default aten::is_conj.default aten::is_distributed.default
aten::is_floating_point.default aten::is_inference.default aten::is_leaf.default aten::is_neg.default
aten::is_nonzero.default aten::is_pinned.default aten::is_same_size.default aten::is_set_to.default
aten::is_signed.default aten::is_vulkan_available.default aten::isclose.default aten::isfinite.default
aten::isin.Scalar_Tensor aten::isin.Scalar_Tensor_out aten::isin.Tensor_Scalar aten::isin.Tensor_Scalar_out
aten::isin.Tensor_Tensor aten::isin.Tensor_Tensor_out aten::isinf.default aten::isinf.out aten::isnan.default
aten::isnan.out aten::isneginf.default aten::isneginf.out aten::isposinf.default aten::isposinf.out
aten::isreal.default aten::istft.default aten::item.default aten::kaiser_window.beta
aten::kaiser_window.beta_out aten::kaiser_window.default aten::kaiser_window.out aten::kaiser_window.periodic
aten::kaiser_window.periodic_out aten::kl_div.default aten::kron.default aten::kron.out aten::kthvalue.default
aten::kthvalue.dimname aten::kthvalue.dimname_out aten::kthvalue.values aten::l1_loss.default
aten::layer_norm.default aten::lcm.default aten::lcm.out aten::lcm_.default aten::ldexp.Tensor aten::ldexp.out
aten::ldexp_.default aten::le.Scalar aten::le.Scalar_out aten::le.Tensor aten::le.Tensor_out aten::le_.Scalar
aten::le_.Tensor aten::leaky_relu.default aten::leaky_relu.out aten::leaky_relu_.default
aten::leaky_relu_backward.default aten::leaky_relu_backward.grad_input aten::lerp.Scalar aten::lerp.Scalar_out
aten::lerp.Tensor aten::lerp.Tensor_out aten::lerp_.Scalar aten::lerp_.Tensor aten::less.Scalar
aten::less.Scalar_out aten::less.Tensor aten::less.Tensor_out aten::less_.Scalar aten::less_.Tensor
aten::less_equal.Scalar aten::less_equal.Scalar_out aten::less_equal.Tensor aten::less_equal.Tensor_out
aten::less_equal_.Scalar aten::less_equal_.Tensor aten::lgamma.default aten::lgamma.out aten::lgamma_.default
aten::lift.default aten::lift.out aten::lift_fresh.default aten::lift_fresh_copy.default
aten::lift_fresh_copy.out aten::linalg__powsum.default aten::linalg_cholesky.default aten::linalg_cholesky.out
aten::linalg_cholesky_ex.L aten::linalg_cholesky_ex.default aten::linalg_cond.default aten::linalg_cond.out
aten::linalg_cond.p_str aten::linalg_cond.p_str_out aten::linalg_cross.default aten::linalg_cross.out
aten::linalg_det.default aten::linalg_det.out aten::linalg_diagonal.default aten::linalg_eig.default
aten::linalg_eig.out aten::linalg_eigh.default aten::linalg_eigh.eigvals aten::linalg_eigvals.default
aten::linalg_eigvals.out aten::linalg_eigvalsh.default aten::linalg_eigvalsh.out
aten::linalg_householder_product.default aten::linalg_householder_product.out aten::linalg_inv.default
aten::linalg_inv.out aten::linalg_inv_ex.default aten::linalg_inv_ex.inverse aten::linalg_ldl_factor.default
aten::linalg_ldl_factor.out aten::linalg_ldl_factor_ex.default aten::linalg_ldl_factor_ex.out
aten::linalg_ldl_solve.default aten::linalg_ldl_solve.out aten::linalg_lstsq.default aten::linalg_lstsq.out
aten::linalg_lu.default aten::linalg_lu.out aten::linalg_lu_factor.default aten::linalg_lu_factor.out
aten::linalg_lu_factor_ex.default aten::linalg_lu_factor_ex.out aten::linalg_lu_solve.default
aten::linalg_lu_solve.out aten::linalg_matmul.default aten::linalg_matmul.out aten::linalg_matrix_exp.default
aten::linalg_matrix_exp.out aten::linalg_matrix_norm.default aten::linalg_matrix_norm.out
aten::linalg_matrix_norm.str_ord aten::linalg_matrix_norm.str_ord_out aten::linalg_matrix_power.default
aten::linalg_matrix_power.out aten::linalg_matrix_rank.atol_rtol_float
aten::linalg_matrix_rank.atol_rtol_float_out aten::linalg_matrix_rank.atol_rtol_tensor
aten::linalg_matrix_rank.atol_rtol_tensor_out aten::linalg_matrix_rank.default aten::linalg_matrix_rank.out
aten::linalg_matrix_rank.out_tol_tensor aten::linalg_matrix_rank.tol_tensor aten::linalg_multi_dot.default
aten::linalg_multi_dot.out aten::linalg_norm.default aten::linalg_norm.ord_str aten::linalg_norm.ord_str_out
aten::linalg_norm.out aten::linalg_pinv.atol_rtol_float aten::linalg_pinv.atol_rtol_float_out
aten::linalg_pinv.atol_rtol_tensor aten::linalg_pinv.atol_rtol_tensor_out aten::linalg_pinv.default
aten::linalg_pinv.out aten::linalg_pinv.out_rcond_tensor aten::linalg_pinv.rcond_tensor
aten::linalg_qr.default aten::linalg_qr.out aten::linalg_slogdet.default aten::linalg_slogdet.out
aten::linalg_solve.default aten::linalg_solve.out aten::linalg_solve_ex.default aten::linalg_solve_ex.out
aten::linalg_solve_triangular.default aten::linalg_solve_triangular.out aten::linalg_svd.U
aten::linalg_svd.default aten::linalg_svdvals.default aten::linalg_svdvals.out aten::linalg_tensorinv.default
aten::linalg_tensorinv.out aten::linalg_tensorsolve.default aten::linalg_tensorsolve.out
aten::linalg_vander.default aten::linalg_vecdot.default aten::linalg_vecdot.out
aten::linalg_vector_norm.default aten::linalg_vector_norm.out aten::linear.default aten::linear.out
aten::linear_backward.default aten::linear_backward.out aten::linspace.Scalar_Tensor
aten::linspace.Scalar_Tensor_out aten::linspace.Tensor_Scalar aten::linspace.Tensor_Scalar_out
aten::linspace.Tensor_Tensor aten::linspace.Tensor_Tensor_out aten::linspace.default aten::linspace.out
aten::log.default aten::log.out aten::log10.default aten::log10.out aten::log10_.default aten::log1p.default
aten::log1p.out aten::log1p_.default aten::log2.default aten::log2.out aten::log2_.default aten::log_.default
aten::log_normal.default aten::log_normal.out aten::log_normal_.default aten::log_sigmoid.default
aten::log_sigmoid.out aten::log_sigmoid_backward.default aten::log_sigmoid_backward.grad_input
aten::log_sigmoid_forward.default aten::log_sigmoid_forward.output aten::log_softmax.Dimname
aten::log_softmax.int aten::log_softmax.int_out aten::logaddexp.default aten::logaddexp.out
aten::logaddexp2.default aten::logaddexp2.out aten::logcumsumexp.default aten::logcumsumexp.dimname
aten::logcumsumexp.dimname_out aten::logcumsumexp.out aten::logdet.default aten::logical_and.default
aten::logical_and.out aten::logical_and_.default aten::logical_not.default aten::logical_not.out
aten::logical_not_.default aten::logical_or.default aten::logical_or.out aten::logical_or_.default
aten::logical_xor.default aten::logical_xor.out aten::logical_xor_.default aten::logit.default aten::logit.out
aten::logit_.default aten::logit_backward.default aten::logit_backward.grad_input aten::logspace.Scalar_Tensor
aten::logspace.Scalar_Tensor_out aten::logspace.Tensor_Scalar aten::logspace.Tensor_Scalar_out
aten::logspace.Tensor_Tensor aten::logspace.Tensor_Tensor_out aten::logspace.default aten::logspace.out
aten::logsumexp.default aten::logsumexp.names aten::logsumexp.names_out aten::logsumexp.out aten::lstm.data
aten::lstm.input aten::lstm_cell.default aten::lstm_mps_backward.default aten::lstm_mps_backward.out
aten::lt.Scalar aten::lt.Scalar_out aten::lt.Tensor aten::lt.Tensor_out aten::lt_.Scalar aten::lt_.Tensor
aten::lu_solve.default aten::lu_solve.out aten::lu_unpack.default aten::lu_unpack.out aten::mH.default
aten::mT.default aten::margin_ranking_loss.default aten::masked_fill.Scalar aten::masked_fill.Scalar_out
aten::masked_fill.Tensor aten::masked_fill.Tensor_out aten::masked_fill_.Scalar aten::masked_fill_.Tensor
aten::masked_scatter.default aten::masked_scatter.out aten::masked_scatter_.default
aten::masked_scatter_backward.default aten::masked_select.default aten::masked_select.out
aten::masked_select_backward.default aten::matmul.default aten::matmul.out aten::matmul_backward.default
aten::matmul_backward.out aten::matrix_H.default aten::matrix_exp.default aten::matrix_exp_backward.default
aten::matrix_power.default aten::matrix_power.out aten::max.default aten::max.dim aten::max.dim_max
aten::max.names_dim aten::max.names_dim_max aten::max.other aten::max.out aten::max.unary_out
aten::max_pool1d.default aten::max_pool1d_with_indices.default aten::max_pool2d.default
aten::max_pool2d_backward.default aten::max_pool2d_backward.out aten::max_pool2d_with_indices.default
aten::max_pool2d_with_indices.out aten::max_pool2d_with_indices_backward.default
aten::max_pool2d_with_indices_backward.grad_input aten::max_pool3d.default
aten::max_pool3d_with_indices.default aten::max_pool3d_with_indices.out
aten::max_pool3d_with_indices_backward.default aten::max_pool3d_with_indices_backward.grad_input
aten::max_unpool2d.default aten::max_unpool2d.out aten::max_unpool3d.default aten::max_unpool3d.out
aten::maximum.default aten::maximum.out aten::mean.default aten::mean.dim aten::mean.dtype_out
aten::mean.names_dim aten::mean.names_out aten::mean.out aten::median.default aten::median.dim
aten::median.dim_values aten::median.names_dim aten::median.names_dim_values aten::median.out
aten::meshgrid.default aten::meshgrid.indexing aten::min.default aten::min.dim aten::min.dim_min
aten::min.names_dim aten::min.names_dim_min aten::min.other aten::min.out aten::min.unary_out
aten::minimum.default aten::minimum.out aten::miopen_batch_norm.default aten::miopen_batch_norm.out
aten::miopen_batch_norm_backward.default aten::miopen_batch_norm_backward.out aten::miopen_convolution.default
aten::miopen_convolution.out aten::miopen_convolution_add_relu.default aten::miopen_convolution_relu.default
aten::miopen_convolution_transpose.default aten::miopen_convolution_transpose.out aten::miopen_ctc_loss.Tensor
aten::miopen_ctc_loss.default aten::miopen_ctc_loss.out aten::miopen_depthwise_convolution.default
aten::miopen_depthwise_convolution.out aten::miopen_rnn.default aten::miopen_rnn.out
aten::miopen_rnn_backward.default aten::miopen_rnn_backward.out aten::mish.default aten::mish.out
aten::mish_.default aten::mish_backward.default aten::mkldnn_adaptive_avg_pool2d.default
aten::mkldnn_adaptive_avg_pool2d.out aten::mkldnn_adaptive_avg_pool2d_backward.default
aten::mkldnn_adaptive_avg_pool2d_backward.out aten::mkldnn_convolution.default aten::mkldnn_convolution.out
aten::mkldnn_linear.default aten::mkldnn_linear.out aten::mkldnn_linear_backward.default
aten::mkldnn_linear_backward.out aten::mkldnn_linear_backward_input.default
aten::mkldnn_linear_backward_input.out aten::mkldnn_linear_backward_weights.default
aten::mkldnn_linear_backward_weights.out aten::mkldnn_max_pool2d.default aten::mkldnn_max_pool2d.out
aten::mkldnn_max_pool2d_backward.default aten::mkldnn_max_pool2d_backward.out aten::mkldnn_max_pool3d.default
aten::mkldnn_max_pool3d.out aten::mkldnn_max_pool3d_backward.default aten::mkldnn_max_pool3d_backward.out
aten::mkldnn_reorder_conv2d_weight.default aten::mkldnn_reorder_conv2d_weight.out
aten::mkldnn_reorder_conv3d_weight.default aten::mkldnn_reorder_conv3d_weight.out
aten::mkldnn_rnn_layer.default aten::mkldnn_rnn_layer.out aten::mkldnn_rnn_layer_backward.default
aten::mkldnn_rnn_layer_backward.out aten::mm.default aten::mm.dtype aten::mm.dtype_out aten::mm.out
aten::mode.default aten::mode.dimname aten::mode.dimname_out aten::mode.values aten::moveaxis.int
aten::moveaxis.intlist aten::movedim.int aten::movedim.intlist aten::mps_convolution_backward.default
aten::mps_convolution_backward.out aten::mps_convolution_transpose_backward.default
aten::mps_convolution_transpose_backward.out aten::mse_loss.default aten::mse_loss.out
aten::mse_loss_backward.default aten::mse_loss_backward.grad_input aten::msort.default aten::msort.out
aten::mul.Scalar aten::mul.Scalar_out aten::mul.Tensor aten::mul.out aten::mul_.Scalar aten::mul_.Tensor
aten::multi_margin_loss.default aten::multi_margin_loss.out aten::multi_margin_loss_backward.default
aten::multi_margin_loss_backward.grad_input aten::multilabel_margin_loss.default
aten::multilabel_margin_loss.out aten::multilabel_margin_loss_backward.default
aten::multilabel_margin_loss_backward.grad_input aten::multilabel_margin_loss_forward.default
aten::multilabel_margin_loss_forward.output aten::multinomial.default aten::multinomial.out
aten::multiply.Scalar aten::multiply.Tensor aten::multiply.out aten::multiply_.Scalar aten::multiply_.Tensor
aten::mv.default aten::mv.out aten::mvlgamma.default aten::mvlgamma.out aten::mvlgamma_.default
aten::nan_to_num.default aten::nan_to_num.out aten::nan_to_num_.default aten::nanmean.default
aten::nanmean.out aten::nanmedian.default aten::nanmedian.dim aten::nanmedian.dim_values
aten::nanmedian.names_dim aten::nanmedian.names_dim_values aten::nanmedian.out aten::nanquantile.default
aten::nanquantile.out aten::nanquantile.scalar aten::nanquantile.scalar_out aten::nansum.default
aten::nansum.out aten::narrow.Tensor aten::narrow.default aten::narrow_copy.default aten::narrow_copy.out
aten::native_batch_norm.default aten::native_batch_norm.out aten::native_batch_norm_backward.default
aten::native_batch_norm_backward.out aten::native_channel_shuffle.default aten::native_dropout.default
aten::native_dropout.out aten::native_dropout_backward.default aten::native_dropout_backward.out
aten::native_group_norm.default aten::native_group_norm.out aten::native_group_norm_backward.default
aten::native_group_norm_backward.out aten::native_layer_norm.default aten::native_layer_norm.out
aten::native_layer_norm_backward.default aten::native_layer_norm_backward.out
aten::native_norm.ScalarOpt_dim_dtype aten::native_norm.ScalarOpt_dim_dtype_out aten::native_norm.default
aten::native_norm.out aten::ne.Scalar aten::ne.Scalar_out aten::ne.Tensor aten::ne.Tensor_out aten::ne_.Scalar
aten::ne_.Tensor aten::neg.default aten::neg.out aten::neg_.default aten::negative.default aten::negative.out
aten::negative_.default aten::nested_to_padded_tensor.default aten::new_empty.default aten::new_empty.out
aten::new_empty_strided.default aten::new_empty_strided.out aten::new_full.default aten::new_full.out
aten::new_ones.default aten::new_ones.out aten::new_zeros.default aten::new_zeros.out aten::nextafter.default
aten::nextafter.out aten::nextafter_.default aten::nll_loss.default aten::nll_loss.out
aten::nll_loss2d.default aten::nll_loss2d.out aten::nll_loss2d_backward.default
aten::nll_loss2d_backward.grad_input aten::nll_loss2d_forward.default aten::nll_loss2d_forward.output
aten::nll_loss_backward.default aten::nll_loss_backward.grad_input aten::nll_loss_forward.default
aten::nll_loss_forward.output aten::nll_loss_nd.default aten::nonzero.default aten::nonzero.out
aten::nonzero_numpy.default aten::nonzero_static.default aten::nonzero_static.out aten::norm.Scalar
aten::norm.ScalarOpt_dim aten::norm.ScalarOpt_dim_dtype aten::norm.ScalarOpt_dtype
aten::norm.ScalarOpt_dtype_out aten::norm.Scalar_out aten::norm.dtype_out aten::norm.names_ScalarOpt_dim
aten::norm.names_ScalarOpt_dim_dtype aten::norm.names_dtype_out aten::norm.names_out aten::norm.out
aten::norm_except_dim.default aten::normal.Tensor_Tensor aten::normal.Tensor_Tensor_out
aten::normal.Tensor_float aten::normal.Tensor_float_out aten::normal.float_Tensor
aten::normal.float_Tensor_out aten::normal.float_float aten::normal.float_float_out aten::normal.out
aten::normal_.default aten::normal_functional.default aten::not_equal.Scalar aten::not_equal.Scalar_out
aten::not_equal.Tensor aten::not_equal.Tensor_out aten::not_equal_.Scalar aten::not_equal_.Tensor
aten::nuclear_norm.default aten::nuclear_norm.dim aten::nuclear_norm.dim_out aten::nuclear_norm.out
aten::numpy_T.default aten::one_hot.default aten::ones.default aten::ones.names aten::ones.names_out
aten::ones.out aten::ones_like.default aten::ones_like.out aten::orgqr.default aten::orgqr.out
aten::ormqr.default aten::ormqr.out aten::outer.default aten::outer.out aten::output_nr.default
aten::pad.default aten::pad_sequence.default aten::pairwise_distance.default aten::pdist.default
aten::permute.default aten::permute_copy.default aten::permute_copy.out aten::pin_memory.default
aten::pinverse.default aten::pixel_shuffle.default aten::pixel_shuffle.out aten::pixel_unshuffle.default
aten::pixel_unshuffle.out aten::poisson.default aten::poisson.out aten::poisson_nll_loss.default
aten::polar.default aten::polar.out aten::polygamma.default aten::polygamma.out aten::polygamma_.default
aten::positive.default aten::pow.Scalar aten::pow.Scalar_out aten::pow.Tensor_Scalar
aten::pow.Tensor_Scalar_out aten::pow.Tensor_Tensor aten::pow.Tensor_Tensor_out aten::pow_.Scalar
aten::pow_.Tensor aten::prelu.default aten::prod.Dimname_out aten::prod.default aten::prod.dim_Dimname
aten::prod.dim_int aten::prod.int_out aten::prod.out aten::promote_types.default aten::put.default
aten::put.out aten::put_.default aten::q_per_channel_axis.default aten::q_per_channel_scales.default
aten::q_per_channel_scales.out aten::q_per_channel_zero_points.default aten::q_per_channel_zero_points.out
aten::q_scale.default aten::q_zero_point.default aten::qr.Q aten::qr.default aten::qscheme.default
aten::quantile.default aten::quantile.out aten::quantile.scalar aten::quantile.scalar_out
aten::quantize_per_channel.default aten::quantize_per_channel.out aten::quantize_per_tensor.default
aten::quantize_per_tensor.out aten::quantize_per_tensor.tensor_qparams
aten::quantize_per_tensor.tensor_qparams_out aten::quantize_per_tensor.tensors
aten::quantize_per_tensor.tensors_out aten::quantize_per_tensor_dynamic.default
aten::quantize_per_tensor_dynamic.out aten::quantized_batch_norm.default aten::quantized_batch_norm.out
aten::quantized_gru_cell.default aten::quantized_lstm_cell.default aten::quantized_max_pool1d.default
aten::quantized_max_pool1d.out aten::quantized_max_pool2d.default aten::quantized_max_pool2d.out
aten::quantized_max_pool3d.default aten::quantized_max_pool3d.out aten::quantized_rnn_relu_cell.default
aten::quantized_rnn_tanh_cell.default aten::rad2deg.default aten::rad2deg.out aten::rad2deg_.default
aten::rand.default aten::rand.generator aten::rand.generator_out aten::rand.generator_with_names
aten::rand.generator_with_names_out aten::rand.names aten::rand.names_out aten::rand.out
aten::rand_like.default aten::rand_like.generator aten::rand_like.generator_out aten::rand_like.out
aten::randint.default aten::randint.generator aten::randint.generator_out aten::randint.low
aten::randint.low_generator aten::randint.low_generator_out aten::randint.low_out aten::randint.out
aten::randint_like.Tensor aten::randint_like.Tensor_generator aten::randint_like.Tensor_generator_out
aten::randint_like.Tensor_out aten::randint_like.default aten::randint_like.generator
aten::randint_like.generator_out aten::randint_like.low_dtype aten::randint_like.low_dtype_out
aten::randint_like.low_generator_dtype aten::randint_like.low_generator_dtype_out aten::randint_like.out
aten::randn.default aten::randn.generator aten::randn.generator_out aten::randn.generator_with_names
aten::randn.generator_with_names_out aten::randn.names aten::randn.names_out aten::randn.out
aten::randn_like.default aten::randn_like.generator aten::randn_like.generator_out aten::randn_like.out
aten::random.default aten::random.from aten::random.from_out aten::random.out aten::random.to
aten::random.to_out aten::random_.default aten::random_.from aten::random_.to aten::randperm.default
aten::randperm.generator aten::randperm.generator_out aten::randperm.out aten::range.default aten::range.out
aten::range.out_ aten::range.step aten::ravel.default aten::real.default aten::reciprocal.default
aten::reciprocal.out aten::reciprocal_.default aten::record_stream.default aten::refine_names.default
aten::reflection_pad1d.default aten::reflection_pad1d.out aten::reflection_pad1d_backward.default
aten::reflection_pad1d_backward.grad_input aten::reflection_pad2d.default aten::reflection_pad2d.out
aten::reflection_pad2d_backward.default aten::reflection_pad2d_backward.grad_input
aten::reflection_pad3d.default aten::reflection_pad3d.out aten::reflection_pad3d_backward.default
aten::reflection_pad3d_backward.grad_input aten::relu.default aten::relu.out aten::relu6.default
aten::relu6_.default aten::relu_.default aten::remainder.Scalar aten::remainder.Scalar_Tensor
aten::remainder.Scalar_Tensor_out aten::remainder.Scalar_out aten::remainder.Tensor aten::remainder.Tensor_out
aten::remainder_.Scalar aten::remainder_.Tensor aten::rename.default aten::rename_.default
aten::renorm.default aten::renorm.out aten::renorm_.default aten::repeat.default aten::repeat.out
aten::repeat_interleave.Tensor aten::repeat_interleave.Tensor_out aten::repeat_interleave.self_Tensor
aten::repeat_interleave.self_int aten::replication_pad1d.default aten::replication_pad1d.out
aten::replication_pad1d_backward.default aten::replication_pad1d_backward.grad_input
aten::replication_pad2d.default aten::replication_pad2d.out aten::replication_pad2d_backward.default
aten::replication_pad2d_backward.grad_input aten::replication_pad3d.default aten::replication_pad3d.out
aten::replication_pad3d_backward.default aten::replication_pad3d_backward.grad_input
aten::requires_grad_.default aten::reshape.default aten::reshape_as.default aten::resize.default
aten::resize.out aten::resize_.default aten::resize_as.default aten::resize_as.out aten::resize_as_.default
aten::resize_as_sparse.default aten::resize_as_sparse.out aten::resize_as_sparse_.default
aten::resolve_conj.default aten::resolve_neg.default aten::result_type.Scalar aten::result_type.Scalar_Scalar
aten::result_type.Scalar_Tensor aten::result_type.Tensor aten::retain_grad.default aten::retains_grad.default
aten::rms_norm.default aten::rnn_relu.data aten::rnn_relu.input aten::rnn_relu_cell.default
aten::rnn_tanh.data aten::rnn_tanh.input aten::rnn_tanh_cell.default aten::roll.default aten::roll.out
aten::rot90.default aten::rot90.out aten::round.decimals aten::round.decimals_out aten::round.default
aten::round.out aten::round_.decimals aten::round_.default aten::row_indices.default
aten::row_indices_copy.default aten::row_indices_copy.out aten::row_stack.default aten::row_stack.out
aten::rrelu.default aten::rrelu_.default aten::rrelu_with_noise.default aten::rrelu_with_noise.out
aten::rrelu_with_noise_.default aten::rrelu_with_noise_backward.default aten::rrelu_with_noise_backward.out
aten::rrelu_with_noise_functional.default aten::rsqrt.default aten::rsqrt.out aten::rsqrt_.default
aten::rsub.Scalar aten::rsub.Scalar_out aten::rsub.Tensor aten::rsub.Tensor_out aten::scalar_tensor.default
aten::scalar_tensor.out aten::scaled_dot_product_attention.default aten::scatter.dimname_src
aten::scatter.dimname_value aten::scatter.reduce aten::scatter.reduce_out aten::scatter.src
aten::scatter.src_out aten::scatter.value aten::scatter.value_out aten::scatter.value_reduce
aten::scatter.value_reduce_out aten::scatter_.reduce aten::scatter_.src aten::scatter_.value
aten::scatter_.value_reduce aten::scatter_add.default aten::scatter_add.dimname aten::scatter_add.out
aten::scatter_add_.default aten::scatter_reduce.two aten::scatter_reduce.two_out aten::scatter_reduce_.two
aten::searchsorted.Scalar aten::searchsorted.Scalar_out aten::searchsorted.Tensor
aten::searchsorted.Tensor_out aten::segment_reduce.default aten::segment_reduce.out aten::select.Dimname
aten::select.int aten::select_backward.default aten::select_backward.out aten::select_copy.int
aten::select_copy.int_out aten::select_scatter.default aten::select_scatter.out aten::selu.default
aten::selu_.default aten::set.default aten::set.out aten::set.source_Storage aten::set.source_Storage_out
aten::set.source_Storage_storage_offset aten::set.source_Storage_storage_offset_out aten::set.source_Tensor
aten::set.source_Tensor_out aten::set_.default aten::set_.source_Storage
aten::set_.source_Storage_storage_offset aten::set_.source_Tensor aten::set_.source_Tensor_storage_offset
aten::set_data.default aten::sgn.default aten::sgn.out aten::sgn_.default aten::sigmoid.default
aten::sigmoid.out aten::sigmoid_.default aten::sigmoid_backward.default aten::sigmoid_backward.grad_input
aten::sign.default aten::sign.out aten::sign_.default aten::signbit.default aten::signbit.out
aten::silu.default aten::silu.out aten::silu_.default aten::silu_backward.default
aten::silu_backward.grad_input aten::sin.default aten::sin.out aten::sin_.default aten::sinc.default
aten::sinc.out aten::sinc_.default aten::sinh.default aten::sinh.out aten::sinh_.default aten::size.Dimname
aten::size.int aten::slice.Tensor aten::slice_backward.default aten::slice_backward.out
aten::slice_copy.Tensor aten::slice_copy.Tensor_out aten::slice_inverse.default aten::slice_scatter.default
aten::slice_scatter.out aten::slogdet.default aten::slogdet.out aten::slow_conv3d.default
aten::slow_conv3d.out aten::slow_conv3d_forward.default aten::slow_conv3d_forward.output
aten::slow_conv_dilated2d.default aten::slow_conv_dilated2d.out aten::slow_conv_dilated3d.default
aten::slow_conv_dilated3d.out aten::slow_conv_transpose2d.default aten::slow_conv_transpose2d.out
aten::slow_conv_transpose3d.default aten::slow_conv_transpose3d.out aten::smm.default
aten::smooth_l1_loss.default aten::smooth_l1_loss.out aten::smooth_l1_loss_backward.default
aten::smooth_l1_loss_backward.grad_input aten::soft_margin_loss.default aten::soft_margin_loss.out
aten::soft_margin_loss_backward.default aten::soft_margin_loss_backward.grad_input aten::softmax.Dimname
aten::softmax.int aten::softmax.int_out aten::softplus.default aten::softplus.out
aten::softplus_backward.default aten::softplus_backward.grad_input aten::softshrink.default
aten::softshrink.out aten::softshrink_backward.default aten::softshrink_backward.grad_input aten::sort.default
aten::sort.dimname aten::sort.dimname_stable aten::sort.dimname_values aten::sort.dimname_values_stable
aten::sort.stable aten::sort.values aten::sort.values_stable aten::sparse_bsc_tensor.ccol_row_value
aten::sparse_bsc_tensor.ccol_row_value_size aten::sparse_bsr_tensor.crow_col_value
aten::sparse_bsr_tensor.crow_col_value_size aten::sparse_compressed_tensor.comp_plain_value
aten::sparse_compressed_tensor.comp_plain_value_size aten::sparse_coo_tensor.indices
aten::sparse_coo_tensor.indices_size aten::sparse_coo_tensor.size aten::sparse_coo_tensor.size_out
aten::sparse_csc_tensor.ccol_row_value aten::sparse_csc_tensor.ccol_row_value_size
aten::sparse_csr_tensor.crow_col_value aten::sparse_csr_tensor.crow_col_value_size aten::sparse_dim.default
aten::sparse_mask.default aten::sparse_mask.out aten::sparse_resize.default aten::sparse_resize.out
aten::sparse_resize_.default aten::sparse_resize_and_clear.default aten::sparse_resize_and_clear.out
aten::sparse_resize_and_clear_.default aten::sparse_sampled_addmm.default aten::sparse_sampled_addmm.out
aten::special_airy_ai.default aten::special_airy_ai.out aten::special_bessel_j0.default
aten::special_bessel_j0.out aten::special_bessel_j1.default aten::special_bessel_j1.out
aten::special_bessel_y0.default aten::special_bessel_y0.out aten::special_bessel_y1.default
aten::special_bessel_y1.out aten::special_chebyshev_polynomial_t.default
aten::special_chebyshev_polynomial_t.n_scalar aten::special_chebyshev_polynomial_t.n_scalar_out
aten::special_chebyshev_polynomial_t.out aten::special_chebyshev_polynomial_t.x_scalar
aten::special_chebyshev_polynomial_t.x_scalar_out aten::special_chebyshev_polynomial_u.default
aten::special_chebyshev_polynomial_u.n_scalar aten::special_chebyshev_polynomial_u.n_scalar_out
aten::special_chebyshev_polynomial_u.out aten::special_chebyshev_polynomial_u.x_scalar
aten::special_chebyshev_polynomial_u.x_scalar_out aten::special_chebyshev_polynomial_v.default
aten::special_chebyshev_polynomial_v.n_scalar aten::special_chebyshev_polynomial_v.n_scalar_out
aten::special_chebyshev_polynomial_v.out aten::special_chebyshev_polynomial_v.x_scalar
aten::special_chebyshev_polynomial_v.x_scalar_out aten::special_chebyshev_polynomial_w.default
aten::special_chebyshev_polynomial_w.n_scalar aten::special_chebyshev_polynomial_w.n_scalar_out
aten::special_chebyshev_polynomial_w.out aten::special_chebyshev_polynomial_w.x_scalar
aten::special_chebyshev_polynomial_w.x_scalar_out aten::special_digamma.default aten::special_digamma.out
aten::special_entr.default aten::special_entr.out aten::special_erf.default aten::special_erf.out
aten::special_erfc.default aten::special_erfc.out aten::special_erfcx.default aten::special_erfcx.out
aten::special_erfinv.default aten::special_erfinv.out aten::special_exp2.default aten::special_exp2.out
aten::special_expit.default aten::special_expit.out aten::special_expm1.default aten::special_expm1.out
aten::special_gammainc.default aten::special_gammainc.out aten::special_gammaincc.default
aten::special_gammaincc.out aten::special_gammaln.default aten::special_gammaln.out
aten::special_hermite_polynomial_h.default aten::special_hermite_polynomial_h.n_scalar
aten::special_hermite_polynomial_h.n_scalar_out aten::special_hermite_polynomial_h.out
aten::special_hermite_polynomial_h.x_scalar aten::special_hermite_polynomial_h.x_scalar_out
aten::special_hermite_polynomial_he.default aten::special_hermite_polynomial_he.n_scalar
aten::special_hermite_polynomial_he.n_scalar_out aten::special_hermite_polynomial_he.out
aten::special_hermite_polynomial_he.x_scalar aten::special_hermite_polynomial_he.x_scalar_out
aten::special_i0.default aten::special_i0.out aten::special_i0e.default aten::special_i0e.out
aten::special_i1.default aten::special_i1.out aten::special_i1e.default aten::special_i1e.out
aten::special_laguerre_polynomial_l.default aten::special_laguerre_polynomial_l.n_scalar
aten::special_laguerre_polynomial_l.n_scalar_out aten::special_laguerre_polynomial_l.out
aten::special_laguerre_polynomial_l.x_scalar aten::special_laguerre_polynomial_l.x_scalar_out
aten::special_legendre_polynomial_p.default aten::special_legendre_polynomial_p.n_scalar
aten::special_legendre_polynomial_p.n_scalar_out aten::special_legendre_polynomial_p.out
aten::special_legendre_polynomial_p.x_scalar aten::special_legendre_polynomial_p.x_scalar_out
aten::special_log1p.default aten::special_log1p.out aten::special_log_ndtr.default aten::special_log_ndtr.out
aten::special_log_softmax.default aten::special_logit.default aten::special_logit.out
aten::special_logsumexp.default aten::special_logsumexp.out aten::special_modified_bessel_i0.default
aten::special_modified_bessel_i0.out aten::special_modified_bessel_i1.default
aten::special_modified_bessel_i1.out aten::special_modified_bessel_k0.default
aten::special_modified_bessel_k0.out aten::special_modified_bessel_k1.default
aten::special_modified_bessel_k1.out aten::special_multigammaln.default aten::special_multigammaln.out
aten::special_ndtr.default aten::special_ndtr.out aten::special_ndtri.default aten::special_ndtri.out
aten::special_polygamma.default aten::special_polygamma.out aten::special_psi.default aten::special_psi.out
aten::special_round.default aten::special_round.out aten::special_scaled_modified_bessel_k0.default
aten::special_scaled_modified_bessel_k0.out aten::special_scaled_modified_bessel_k1.default
aten::special_scaled_modified_bessel_k1.out aten::special_shifted_chebyshev_polynomial_t.default
aten::special_shifted_chebyshev_polynomial_t.n_scalar
aten::special_shifted_chebyshev_polynomial_t.n_scalar_out aten::special_shifted_chebyshev_polynomial_t.out
aten::special_shifted_chebyshev_polynomial_t.x_scalar
aten::special_shifted_chebyshev_polynomial_t.x_scalar_out aten::special_shifted_chebyshev_polynomial_u.default
aten::special_shifted_chebyshev_polynomial_u.n_scalar
aten::special_shifted_chebyshev_polynomial_u.n_scalar_out aten::special_shifted_chebyshev_polynomial_u.out
aten::special_shifted_chebyshev_polynomial_u.x_scalar
aten::special_shifted_chebyshev_polynomial_u.x_scalar_out aten::special_shifted_chebyshev_polynomial_v.default
aten::special_shifted_chebyshev_polynomial_v.n_scalar
aten::special_shifted_chebyshev_polynomial_v.n_scalar_out aten::special_shifted_chebyshev_polynomial_v.out
aten::special_shifted_chebyshev_polynomial_v.x_scalar
aten::special_shifted_chebyshev_polynomial_v.x_scalar_out aten::special_shifted_chebyshev_polynomial_w.default
aten::special_shifted_chebyshev_polynomial_w.n_scalar
aten::special_shifted_chebyshev_polynomial_w.n_scalar_out aten::special_shifted_chebyshev_polynomial_w.out
aten::special_shifted_chebyshev_polynomial_w.x_scalar
aten::special_shifted_chebyshev_polynomial_w.x_scalar_out aten::special_sinc.default aten::special_sinc.out
aten::special_softmax.default aten::special_spherical_bessel_j0.default aten::special_spherical_bessel_j0.out
aten::special_xlog1py.default aten::special_xlog1py.other_scalar aten::special_xlog1py.other_scalar_out
aten::special_xlog1py.out aten::special_xlog1py.self_scalar aten::special_xlog1py.self_scalar_out
aten::special_xlogy.default aten::special_xlogy.other_scalar aten::special_xlogy.other_scalar_out
aten::special_xlogy.out aten::special_xlogy.self_scalar aten::special_xlogy.self_scalar_out
aten::special_zeta.default aten::special_zeta.other_scalar aten::special_zeta.other_scalar_out
aten::special_zeta.out aten::special_zeta.self_scalar aten::special_zeta.self_scalar_out aten::split.Tensor
aten::split.sizes aten::split_copy.Tensor aten::split_copy.Tensor_out aten::split_with_sizes.default
aten::split_with_sizes_copy.default aten::split_with_sizes_copy.out aten::sqrt.default aten::sqrt.out
aten::sqrt_.default aten::square.default aten::square.out aten::square_.default aten::squeeze.default
aten::squeeze.dim aten::squeeze.dimname aten::squeeze.dims aten::squeeze_.default aten::squeeze_.dim
aten::squeeze_.dimname aten::squeeze_.dims aten::squeeze_copy.default aten::squeeze_copy.dim
aten::squeeze_copy.dim_out aten::squeeze_copy.dims aten::squeeze_copy.dims_out aten::squeeze_copy.out
aten::sspaddmm.default aten::sspaddmm.out aten::stack.default aten::stack.out aten::std.correction
aten::std.correction_names aten::std.correction_names_out aten::std.correction_out aten::std.default
aten::std.dim aten::std.names_dim aten::std.names_out aten::std.out aten::std_mean.correction
aten::std_mean.correction_names aten::std_mean.correction_out aten::std_mean.default aten::std_mean.dim
aten::std_mean.names_dim aten::stft.center aten::stft.default aten::stride.Dimname aten::stride.int
aten::sub.Scalar aten::sub.Scalar_out aten::sub.Tensor aten::sub.out aten::sub_.Scalar aten::sub_.Tensor
aten::subtract.Scalar aten::subtract.Tensor aten::subtract.out aten::subtract_.Scalar aten::subtract_.Tensor
aten::sum.DimnameList_out aten::sum.IntList_out aten::sum.default aten::sum.dim_DimnameList
aten::sum.dim_IntList aten::sum.out aten::sum_to_size.default aten::svd.U aten::svd.default
aten::swapaxes.default aten::swapaxes_.default aten::swapdims.default aten::swapdims_.default
aten::sym_constrain_range.default aten::sym_constrain_range_for_size.default aten::sym_is_contiguous.default
aten::sym_numel.default aten::sym_size.int aten::sym_storage_offset.default aten::sym_stride.int
aten::t.default aten::t_.default aten::t_copy.default aten::t_copy.out aten::take.default aten::take.out
aten::take_along_dim.default aten::take_along_dim.out aten::tan.default aten::tan.out aten::tan_.default
aten::tanh.default aten::tanh.out aten::tanh_.default aten::tanh_backward.default
aten::tanh_backward.grad_input aten::tensor_split.indices aten::tensor_split.sections
aten::tensor_split.tensor_indices_or_sections aten::tensordot.default aten::tensordot.out
aten::thnn_conv2d.default aten::thnn_conv2d.out aten::threshold.default aten::threshold.out
aten::threshold_.default aten::threshold_backward.default aten::threshold_backward.grad_input
aten::tile.default aten::to.device aten::to.dtype aten::to.dtype_layout aten::to.other aten::to_dense.default
aten::to_dense_backward.default aten::to_mkldnn.default aten::to_mkldnn.out aten::to_mkldnn_backward.default
aten::to_padded_tensor.default aten::to_padded_tensor.out aten::to_sparse.default aten::to_sparse.sparse_dim
aten::to_sparse_bsc.default aten::to_sparse_bsr.default aten::to_sparse_csc.default
aten::to_sparse_csr.default aten::topk.default aten::topk.values aten::trace.default aten::trace.out
aten::trace_backward.default aten::transpose.Dimname aten::transpose.int aten::transpose_.default
aten::transpose_copy.int aten::transpose_copy.int_out aten::trapezoid.dx aten::trapezoid.x aten::trapz.dx
aten::trapz.x aten::triangular_solve.X aten::triangular_solve.default aten::tril.default aten::tril.out
aten::tril_.default aten::tril_indices.default aten::tril_indices.out aten::triplet_margin_loss.default
aten::triu.default aten::triu.out aten::triu_.default aten::triu_indices.default aten::triu_indices.out
aten::true_divide.Scalar aten::true_divide.Tensor aten::true_divide.out aten::true_divide_.Scalar
aten::true_divide_.Tensor aten::trunc.default aten::trunc.out aten::trunc_.default aten::type_as.default
aten::unbind.Dimname aten::unbind.int aten::unbind_copy.int aten::unbind_copy.int_out aten::unflatten.Dimname
aten::unflatten.int aten::unflatten_dense_tensors.default aten::unfold.default aten::unfold_backward.default
aten::unfold_backward.out aten::unfold_copy.default aten::unfold_copy.out aten::uniform.default
aten::uniform.out aten::uniform_.default aten::unique_consecutive.default aten::unique_consecutive.out
aten::unique_dim.default aten::unique_dim.out aten::unique_dim_consecutive.default
aten::unique_dim_consecutive.out aten::unsafe_chunk.default aten::unsafe_split.Tensor
aten::unsafe_split.Tensor_out aten::unsafe_split_with_sizes.default aten::unsafe_split_with_sizes.out
aten::unsqueeze.default aten::unsqueeze_.default aten::unsqueeze_copy.default aten::unsqueeze_copy.out
aten::upsample_bicubic2d.default aten::upsample_bicubic2d.out aten::upsample_bicubic2d.vec
aten::upsample_bicubic2d_backward.default aten::upsample_bicubic2d_backward.grad_input
aten::upsample_bilinear2d.default aten::upsample_bilinear2d.out aten::upsample_bilinear2d.vec
aten::upsample_bilinear2d.vec_out aten::upsample_bilinear2d_backward.default
aten::upsample_bilinear2d_backward.grad_input aten::upsample_linear1d.default aten::upsample_linear1d.out
aten::upsample_linear1d.vec aten::upsample_linear1d_backward.default
aten::upsample_linear1d_backward.grad_input aten::upsample_nearest1d.default aten::upsample_nearest1d.out
aten::upsample_nearest1d.vec aten::upsample_nearest1d_backward.default
aten::upsample_nearest1d_backward.grad_input aten::upsample_nearest2d.default aten::upsample_nearest2d.out
aten::upsample_nearest2d.vec aten::upsample_nearest2d.vec_out aten::upsample_nearest2d_backward.default
aten::upsample_nearest2d_backward.grad_input aten::upsample_nearest3d.default aten::upsample_nearest3d.out
aten::upsample_nearest3d.vec aten::upsample_nearest3d_backward.default
aten::upsample_nearest3d_backward.grad_input aten::upsample_trilinear3d.default aten::upsample_trilinear3d.out
aten::upsample_trilinear3d.vec aten::upsample_trilinear3d_backward.default
aten::upsample_trilinear3d_backward.grad_input aten::value_selecting_reduction_backward.default
aten::values.default aten::values_copy.default aten::values_copy.out aten::vander.default aten::var.correction
aten::var.correction_names aten::var.correction_names_out aten::var.correction_out aten::var.default
aten::var.dim aten::var.names_dim aten::var.names_out aten::var.out aten::var_mean.correction
aten::var_mean.correction_names aten::var_mean.correction_out aten::var_mean.default aten::var_mean.dim
aten::var_mean.names_dim aten::vdot.default aten::vdot.out aten::view.default aten::view.dtype
aten::view_as.default aten::view_as_complex.default aten::view_as_complex_copy.default
aten::view_as_complex_copy.out aten::view_as_real.default aten::view_as_real_copy.default
aten::view_as_real_copy.out aten::view_copy.default aten::view_copy.dtype aten::view_copy.dtype_out
aten::view_copy.out aten::vsplit.array aten::vsplit.int aten::vstack.default aten::vstack.out
aten::where.Scalar aten::where.ScalarOther aten::where.ScalarSelf aten::where.default aten::where.self
aten::where.self_out aten::xlogy.OutScalar_Other aten::xlogy.OutScalar_Self aten::xlogy.OutTensor
aten::xlogy.Scalar_Other aten::xlogy.Scalar_Self aten::xlogy.Tensor aten::xlogy_.Scalar_Other
aten::xlogy_.Tensor aten::zero.default aten::zero.out aten::zero_.default aten::zeros.default
aten::zeros.names aten::zeros.names_out aten::zeros.out aten::zeros_like.default aten::zeros_like.out
prims::_make_token.default prims::_sink_tokens.default prims::_uniform_helper.default prims::abs.default
prims::acos.default prims::acosh.default prims::add.default prims::amax.default prims::amin.default
prims::as_strided.default prims::as_strided_scatter.default prims::asin.default prims::asinh.default
prims::atan.default prims::atan2.default prims::atanh.default prims::bessel_i0.default
prims::bessel_i0e.default prims::bessel_i1.default prims::bessel_i1e.default prims::bessel_j0.default
prims::bessel_j1.default prims::bitwise_and.default prims::bitwise_not.default prims::bitwise_or.default
prims::bitwise_xor.default prims::broadcast_in_dim.default prims::cat.default prims::cbrt.default
prims::ceil.default prims::clone.default prims::collapse.default prims::collapse_view.default
prims::conj.default prims::conj_physical.default prims::convert_element_type.default
prims::copy_strided.default prims::copy_to.default prims::cos.default prims::cosh.default
prims::device_put.default prims::digamma.default prims::div.default prims::empty.default
prims::empty_permuted.default prims::empty_strided.default prims::eq.default prims::erf.default
prims::erf_inv.default prims::erfc.default prims::erfcx.default prims::exp.default prims::exp2.default
prims::expand_dims.default prims::expm1.default prims::fft_c2c.default prims::fft_c2r.default
prims::fft_r2c.default prims::fill.default prims::floor.default prims::fmax.default prims::fmin.default
prims::fmod.default prims::frexp.default prims::full.default prims::full_like.default prims::gcd.default
prims::ge.default prims::gt.default prims::hypot.default prims::igamma.default prims::igammac.default
prims::imag.default prims::iota.default prims::isfinite.default prims::item.default prims::le.default
prims::lgamma.default prims::log.default prims::log10.default prims::log1p.default prims::log2.default
prims::lt.default prims::maximum.default prims::maximum_value.default prims::minimum.default
prims::minimum_value.default prims::mul.default prims::ndtri.default prims::ne.default prims::neg.default
prims::nextafter.default prims::normal.default prims::pow.default prims::prod.default prims::real.default
prims::reciprocal.default prims::remainder.default prims::reshape.default prims::resize.default
prims::rev.default prims::round.default prims::rsqrt.default prims::scalar_tensor.default
prims::shift_left.default prims::shift_right_arithmetic.default prims::shift_right_logical.default
prims::sign.default prims::signbit.default prims::sin.default prims::sinh.default prims::slice.default
prims::spherical_bessel_j0.default prims::split_dim.default prims::sqrt.default prims::squeeze.default
prims::sub.default prims::sum.default prims::svd.default prims::tan.default prims::tanh.default
prims::transpose.default prims::trunc.default prims::var.default prims::view_element_type.default
prims::view_of.default prims::view_of_dtype.default prims::where.default prims::xor_sum.default
prims::zeta.default
"""
