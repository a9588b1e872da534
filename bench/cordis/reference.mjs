// The reference for bench/seam_vs_seed.py: asks/s of the seed's `ctx.userQuestions.ask()` on cordis.
// Reads one case a line on stdin ("<delegates> <signal> <seconds>") and prints its asks/s, so that the Python side
// can interleave rounds with its own. Signal 0: none; 1: a fresh `AbortSignal.timeout()` per ask, as an agent's
// tool call passes its deadline; 2: one signal shared by every ask. Prints "ready" once the cases are wired.
import { createInterface } from 'node:readline'
import { Context } from 'cordis'
import { UserQuestionService } from './seam.mjs'

const ANSWER = { answers: [{ id: 'q1', selected: ['Yes'] }] }
const QUESTIONS = [{ id: 'q1', question: 'Go?', options: [{ label: 'Yes' }] }]
// As an agent's tool call passes it: a fresh signal with its deadline for every call (long enough never to fire).
const DEADLINE_MS = 600_000

async function contextWith(delegates) {
  const ctx = new Context()
  await ctx.plugin(UserQuestionService)
  for (let i = 0; i < delegates; i++) ctx.on('user-questions/request', (request, next) => next())
  ctx.on('user-questions/request', async () => ANSWER)
  return ctx
}

async function rate(ask, seconds) {
  for (let i = 0; i < 1000; i++) await ask()
  let count = 0
  const start = performance.now()
  let elapsed = 0
  while ((elapsed = (performance.now() - start) / 1000) < seconds) {
    for (let i = 0; i < 1000; i++) await ask()
    count += 1000
  }
  return count / elapsed
}

const contexts = new Map()
for (const delegates of [0, 10]) contexts.set(delegates, await contextWith(delegates))

// Each ask builds its request, as a tool call does.
const asks = [
  service => () => service.ask({ questions: QUESTIONS }),
  service => () => service.ask({ questions: QUESTIONS, signal: AbortSignal.timeout(DEADLINE_MS) }),
  service => {
    const signal = new AbortController().signal
    return () => service.ask({ questions: QUESTIONS, signal })
  },
]

console.log('ready')
for await (const line of createInterface({ input: process.stdin })) {
  const [delegates, signal, seconds] = line.trim().split(/\s+/).map(Number)
  const service = contexts.get(delegates).userQuestions
  const perSecond = await rate(asks[signal](service), seconds)
  console.log(perSecond.toFixed(0))
}
