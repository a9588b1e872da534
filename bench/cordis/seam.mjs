// The original design's seam (user-questions/src/index.ts, as the seed quotes it) on the published cordis:
// `ctx.userQuestions.ask()` runs the five checks, then the `user-questions/request` waterfall. TypeScript's types are
// removed so that Node runs it as is; the statements are the seed's.
import { Service } from 'cordis'

export class UserQuestionError extends Error {
  constructor(message, code) {
    super(message)
    this.name = 'UserQuestionError'
    this.code = code
  }
}

export class UserQuestionService extends Service {
  constructor(ctx) {
    super(ctx, 'userQuestions')
  }

  async ask(request) {
    if (request.signal?.aborted) {
      throw new UserQuestionError('ask_user_question was aborted before the user answered', 'ASK_ABORTED')
    }
    if (request.questions.length === 0) {
      throw new UserQuestionError('ask_user_question requires at least one question', 'EMPTY_QUESTIONS')
    }
    const agent = request.agent
    if (agent !== undefined) {
      const agents = this.ctx.get('agents')
      if (agents === undefined || agents.get(agent.id) !== agent) {
        throw new UserQuestionError(
          'human interaction requires the exact live calling agent when an agent is supplied',
          'CALLER_NOT_LIVE')
      }
      if (!agents.roots().includes(agent)) {
        throw new UserQuestionError(
          'human interaction is unavailable while the calling agent is owned by another live agent; '
          + "include the unresolved question or decision in the child agent's final result",
          'DELEGATED_CALLER')
      }
    }
    for (const question of request.questions) {
      const intent = question.intent
      if (intent === undefined) continue
      if (!(question.options ?? []).some(option => option.label === intent.approve)) {
        throw new UserQuestionError(
          `question ${question.id} declares intent ${intent.kind} whose approve label "${intent.approve}" names none of its options`,
          'BAD_INTENT')
      }
      if (question.detail === undefined) {
        throw new UserQuestionError(
          `question ${question.id} declares intent ${intent.kind} without the detail it reviews`,
          'BAD_INTENT')
      }
    }
    const noAnswerer = () => Promise.reject(new UserQuestionError(
      'no user-questions answerer accepted the request',
      'NO_PROVIDER',
    ))
    // The bench asks without an agent: the seed's scoped branch (`scopeTarget(agent, agent)`) needs the design's
    // scope package, which is not published; the agentless branch is the seed's own line.
    return await this.ctx.waterfall('user-questions/request', request, noAnswerer)
  }
}
