# hearth synth: flag validation (exit 2 with a message), I/O failure (exit 1), files written.
set(_synth_tmp ${CMAKE_CURRENT_BINARY_DIR}/synth_cli)
file(MAKE_DIRECTORY ${_synth_tmp})
function(hearth_synth_cli name rc msg)
  add_test(NAME cli.synth_${name} COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:hearth> "-DARGS=${ARGN}"
           -DEXPECT_RC=${rc} "-DEXPECT_MSG=${msg}" ${_synth_extra} -P ${CMAKE_SOURCE_DIR}/tests/scripts/synth_cli.run)
endfunction()
hearth_synth_cli(help 0 "usage: hearth synth" --help)
hearth_synth_cli(no_output 2 "-o OUT.gguf is required" --n-embd 64)
hearth_synth_cli(bad_heads 2 "multiple of n_head" -o ${_synth_tmp}/x.gguf --n-embd 100)
hearth_synth_cli(bad_block 2 "multiple of 32" -o ${_synth_tmp}/x.gguf --type q4_0 --n-ff 100)
hearth_synth_cli(bad_flag 2 "unknown flag '--bogus'" -o ${_synth_tmp}/x.gguf --bogus 1)
hearth_synth_cli(bad_arch 2 "unknown architecture" -o ${_synth_tmp}/x.gguf --arch gpt9)
hearth_synth_cli(bad_int 2 "not an integer" -o ${_synth_tmp}/x.gguf --n-layer two)
hearth_synth_cli(bad_type 2 "is not a weight type" -o ${_synth_tmp}/x.gguf --type iq2_xxs)
hearth_synth_cli(bad_row 2 "must be a multiple of 256 for type q5_k" -o ${_synth_tmp}/x.gguf --type q5_k --n-embd 128)
hearth_synth_cli(bad_pi_arch 2 "powerinfer files of arch exaone do not exist" -o ${_synth_tmp}/x.gguf --arch exaone --powerinfer)
hearth_synth_cli(missing_value 2 "needs a value" -o ${_synth_tmp}/x.gguf --seed)
hearth_synth_cli(bad_dir 1 "x.gguf" -o ${_synth_tmp}/no/such/dir/x.gguf)
hearth_synth_cli(bad_expert_type 2 "--expert-type: 'q9_9' is not a weight type" -o ${_synth_tmp}/x.gguf --arch gpt-oss
                 --n-expert 4 --expert-type q9_9)
hearth_synth_cli(dense_expert_type 2 "expert_type need n_expert > 0" -o ${_synth_tmp}/x.gguf --expert-type mxfp4)
set(_synth_extra -DFILE=${_synth_tmp}/st.gguf -DEXPECT_MAGIC=47475546)
hearth_synth_cli(smallthinker 0 "wrote" -o ${_synth_tmp}/st.gguf --arch smallthinker --type q8_0 --tied --n-embd 64
                 --n-head 4 --n-ff 128 --n-vocab 400 --tokenizer bpe --seed 5)
set(_synth_extra -DFILE=${_synth_tmp}/go.gguf -DEXPECT_MAGIC=47475546)
hearth_synth_cli(gptoss 0 "wrote" -o ${_synth_tmp}/go.gguf --arch gpt-oss --n-expert 4 --expert-type mxfp4 --n-embd 64
                 --n-head 4 --n-head-kv 2 --n-ff 96 --n-vocab 400 --tokenizer bpe --swa 16)
set(_synth_extra -DFILE=${_synth_tmp}/pi.gguf -DEXPECT_MAGIC=50575249)
hearth_synth_cli(powerinfer 0 "wrote" -o ${_synth_tmp}/pi.gguf --powerinfer --act reglu --type f16 --n-embd 64
                 --n-head 4 --n-ff 128 --pred-rank 32 --sparse-threshold 0.1)
unset(_synth_extra)
