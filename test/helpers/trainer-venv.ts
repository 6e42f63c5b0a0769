/**
 * The trainer's venvs as scripts/python-env.sh makes them, and the command that makes a real torch_xla capture.
 * torch_xla (legacy) pins torch 2.9 and lives in a venv of its own beside the trainer's (torch 2.11): a trainer run
 * that must leave an XLA xplane.pb runs there, with device=xla on XLA:CPU.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { REPO } from './fresh-bundle';

export const TRAINER_VENV = process.env.TPW_VENV ?? path.join(os.homedir(), '.cache/tpu-workbench/venv');
export const XLA_VENV = `${TRAINER_VENV}-xla`;

/** `python -m tpu_trainer.train device=xla …` in the torch_xla venv, with this checkout's trainer first on the path. */
export function xlaTrainerCommand(overrides: string[]): { file: string; args: string[]; env: NodeJS.ProcessEnv } {
  return {
    file: path.join(XLA_VENV, 'bin/python3'),
    args: ['-m', 'tpu_trainer.train', 'device=xla', ...overrides],
    env: { ...process.env, PYTHONPATH: path.join(REPO, 'trainer'), PJRT_DEVICE: 'CPU' },
  };
}
