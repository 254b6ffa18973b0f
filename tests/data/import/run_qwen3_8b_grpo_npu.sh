#!/usr/bin/env bash
# In the style of verl's examples/ascend_extras/grpo_trainer scripts: Qwen3-8B GRPO with FSDP on one Ascend node.
set -xeuo pipefail

source /usr/local/Ascend/ascend-toolkit/set_env.sh   # not on this machine: the importer skips it
source /usr/local/Ascend/nnal/atb/set_env.sh

# device probe: NPU when npu-smi answers
if npu-smi info > /dev/null 2>&1; then
    DEVICE=npu
else
    DEVICE=gpu
fi

export HCCL_CONNECT_TIMEOUT=1500
export HCCL_HOST_SOCKET_PORT_RANGE=60000-60050
export HCCL_NPU_SOCKET_PORT_RANGE=61000-61050
export RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1

NNODES=${NNODES:-1}
NDEVICES_PER_NODE=${NDEVICES_PER_NODE:-8}
MODEL_PATH=${MODEL_PATH:-Qwen/Qwen3-8B}
TRAIN_FILES=${TRAIN_FILES:-$HOME/data/gsm8k/train.parquet}
VAL_FILES=${VAL_FILES:-$HOME/data/gsm8k/test.parquet}
project_name=${PROJECT_NAME:-verl_grpo_gsm8k}
exp_name=${EXP_NAME:-qwen3_8b_fsdp_${DEVICE}}
LOG_DIR=${LOG_DIR:-logs/${exp_name}}
mkdir -p "$LOG_DIR" "$HOME/ckpts"

DATA=(
    data.train_files="$TRAIN_FILES"
    data.val_files="$VAL_FILES"
    data.train_batch_size=16
    data.max_prompt_length=2048
    data.max_response_length=4096
    data.filter_overlong_prompts=True
    data.truncation='error'
)
ACTOR=(
    actor_rollout_ref.model.path="$MODEL_PATH"
    actor_rollout_ref.model.use_remove_padding=True
    actor_rollout_ref.actor.optim.lr=1e-6
    actor_rollout_ref.actor.ppo_mini_batch_size=16
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1
    actor_rollout_ref.actor.use_kl_loss=True
    actor_rollout_ref.actor.kl_loss_coef=0.001
    actor_rollout_ref.actor.kl_loss_type=low_var_kl
    actor_rollout_ref.actor.entropy_coeff=0
    actor_rollout_ref.actor.use_torch_compile=False
    actor_rollout_ref.actor.fsdp_config.param_offload=True
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True
    actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size=2
    actor_rollout_ref.ref.fsdp_config.ulysses_sequence_parallel_size=2
    actor_rollout_ref.ref.fsdp_config.param_offload=True
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1
)
ROLLOUT=(
    actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.tensor_model_parallel_size=4
    actor_rollout_ref.rollout.gpu_memory_utilization=0.4
    actor_rollout_ref.rollout.n=5
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1
    actor_rollout_ref.rollout.enable_chunked_prefill=False
    +actor_rollout_ref.rollout.engine_kwargs.vllm.compilation_config.cudagraph_mode=FULL_DECODE_ONLY
)
TRAINER=(
    algorithm.adv_estimator=grpo
    algorithm.use_kl_in_reward=False
    trainer.critic_warmup=0
    trainer.logger='["console"]'
    trainer.project_name="$project_name"
    trainer.experiment_name="$exp_name"
    trainer.n_gpus_per_node="$NDEVICES_PER_NODE"
    trainer.nnodes="$NNODES"
    trainer.device="$DEVICE"
    trainer.save_freq=20
    trainer.test_freq=5
    trainer.total_epochs=15
    trainer.val_before_train=False
)

python3 -m verl.trainer.main_ppo \
    "${DATA[@]}" \
    "${ACTOR[@]}" \
    "${ROLLOUT[@]}" \
    "${TRAINER[@]}" "$@" 2>&1 | tee "$LOG_DIR/train.log"
