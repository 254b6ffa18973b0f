"""Row shapes of the data people really give verl, written in code (the shapes only: no downloaded data, no copied
code). Each builder names the public script whose output it imitates; the values are made up.

- gsm8k_row: volcengine/verl examples/data_preprocess/gsm8k.py (data_source openai/gsm8k, one user message ending in
  the `####` instruction, reward_model {style rule, ground_truth the number}, extra_info {split, index, answer,
  question})
- math_row: examples/data_preprocess/math_dataset.py (DigitalLearningGmbH/MATH-lighteval, `\\boxed{}` instruction,
  ground truth the last boxed answer of the solution, LaTeX)
- dapo_row: BytedTsinghua-SIA/DAPO-Math-17k as verl's recipe/dapo reads it (data_source math_dapo, ability MATH,
  reward_model {ground_truth, style rule-lighteval/MATH_v2}, extra_info {index: a uuid})
- geo3k_row: examples/data_preprocess/geo3k.py (hiyouga/geometry3k, images [{bytes, path}], `<image>` in the
  prompt, the <think> / \\boxed{} instruction)
- tool_row: examples/data_preprocess/gsm8k_multiturn_w_tool.py (system + user messages, extra_info with
  need_tools_kwargs, tools_kwargs {calc_gsm8k_reward: {create_kwargs: {ground_truth}}}, interaction_kwargs)
- interaction_row: examples/data_preprocess/gsm8k_multiturn_w_interaction.py (interaction_kwargs {name gsm8k, query,
  ground_truth})
- search_row: examples/data_preprocess/preprocess_search_r1_dataset.py (data_source searchR1_nq, ground truth
  {target: [answers]}, tools_kwargs {search: {create_kwargs: ...}})
- code_row: verl's prime_code / codecontests layout (data_source codecontests, ground truth a JSON text of
  {inputs, outputs})
"""

from __future__ import annotations

import json
import struct
import uuid
import zlib

GSM8K_INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'
MATH_INSTRUCTION = "Let's think step by step and output the final answer within \\boxed{}."
DAPO_PREFIX = (
    "Solve the following math problem step by step. The last line of your response should be of the form "
    "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n"
)
DAPO_SUFFIX = '\n\nRemember to put your answer on its own line after "Answer:".'
GEO_INSTRUCTION = (
    "You FIRST think about the reasoning process as an internal monologue and then provide the final answer. "
    "The reasoning process MUST BE enclosed within <think> </think> tags. The final answer MUST BE put in \\boxed{}."
)
MATH_ANSWERS = ["\\frac{1}{2}", "3\\sqrt{2}", "12", "\\pi", "(1, 2)", "-4", "\\frac{7}{3}", "2^{10}", "x^2+1", "0.25"]


def gsm8k_row(i: int, split: str = "train") -> dict:
    q = f"Natalia sold clips to {i + 3} of her friends in April, and then she sold half as many clips in May. How many?"
    truth = str((i + 3) * 3 // 2 + i)
    return {
        "data_source": "openai/gsm8k",
        "prompt": [{"role": "user", "content": f"{q} {GSM8K_INSTRUCTION}"}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": truth},
        "extra_info": {"split": split, "index": i, "answer": f"She sold ... #### {truth}", "question": q},
    }


def math_row(i: int, split: str = "train") -> dict:
    q = f"Compute the value of the expression number {i}; simplify fully."
    truth = MATH_ANSWERS[i % len(MATH_ANSWERS)]
    return {
        "data_source": "DigitalLearningGmbH/MATH-lighteval",
        "prompt": [{"role": "user", "content": f"{q} {MATH_INSTRUCTION}"}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": truth},
        "extra_info": {"split": split, "index": i},
    }


def dapo_row(i: int) -> dict:
    return {
        "data_source": "math_dapo",
        "prompt": [
            {
                "role": "user",
                "content": f"{DAPO_PREFIX}Find the number of integers n with {i} < n^2 < 100.{DAPO_SUFFIX}",
            }
        ],
        "ability": "MATH",
        "reward_model": {"ground_truth": str(10 + i % 17), "style": "rule-lighteval/MATH_v2"},
        "extra_info": {"index": str(uuid.UUID(int=i + 1))},
    }


def png(width: int = 2, height: int = 2) -> bytes:
    """A small valid PNG, made here (no image library)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def geo3k_row(i: int, split: str = "train", images: int = 1, placeholders: int = 1) -> dict:
    problem = "<image>" * placeholders + f"Find x. Round to the nearest tenth if necessary (figure {i})."
    truth = str(3 + i % 9)
    return {
        "data_source": "hiyouga/geometry3k",
        "prompt": [{"role": "user", "content": f"{problem} {GEO_INSTRUCTION}"}],
        "images": [{"bytes": png(), "path": None} for _ in range(images)],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": truth},
        "extra_info": {"split": split, "index": i, "answer": truth, "question": problem},
    }


def tool_row(i: int, split: str = "train") -> dict:
    row = gsm8k_row(i, split)
    truth = row["reward_model"]["ground_truth"]
    q = row["extra_info"]["question"]
    row["prompt"] = [
        {
            "role": "system",
            "content": "You are a math expert. Use the `calc_gsm8k_reward` tool, then answer as `#### <answer>`.",
        },
        {"role": "user", "content": f"{q} Let's think step by step and output the final answer after `####`."},
    ]
    row["extra_info"].update(
        need_tools_kwargs=True,
        tools_kwargs={"calc_gsm8k_reward": {"create_kwargs": {"ground_truth": truth}}},
        interaction_kwargs={"query": q, "ground_truth": truth},
    )
    return row


def interaction_row(i: int, split: str = "train") -> dict:
    row = gsm8k_row(i, split)
    truth = row["reward_model"]["ground_truth"]
    row["extra_info"]["interaction_kwargs"] = {
        "name": "gsm8k",
        "query": row["extra_info"]["question"],
        "ground_truth": truth,
    }
    return row


def search_row(i: int, split: str = "train") -> dict:
    question = f"who sang the song number {i} on the 1998 album"
    targets = [f"Artist {i}", f"The Artist {i}"]
    return {
        "data_source": "searchR1_nq",
        "prompt": [
            {"role": "system", "content": "You are a helpful and harmless assistant."},
            {
                "role": "user",
                "content": f"Answer the given question. Put the answer in <answer> </answer>. Question: {question}",
            },
        ],
        "ability": "fact-reasoning",
        "reward_model": {"style": "rule", "ground_truth": {"target": targets}},
        "extra_info": {
            "index": i,
            "need_tools_kwargs": True,
            "question": question,
            "split": split,
            "tools_kwargs": {
                "search": {
                    "create_kwargs": {
                        "ground_truth": {"target": targets},
                        "question": question,
                        "data_source": "searchR1_nq",
                    }
                }
            },
        },
    }


def code_row(i: int) -> dict:
    tests = {"inputs": [f"{i} {i + 1}\n", "2 3\n"], "outputs": [f"{2 * i + 1}\n", "5\n"]}
    return {
        "data_source": "codecontests",
        "prompt": [
            {"role": "user", "content": "Read two integers and print their sum. Write Python in ```python``` fences."}
        ],
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": json.dumps(tests)},
        "extra_info": {"split": "train", "index": i},
    }
