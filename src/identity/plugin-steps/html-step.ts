import sanitizeHtml from 'sanitize-html';
import type { z } from 'zod';
import type { FlowKind } from '../auth-flow/flow-session.js';
import type { AuthFlowStep, StepContext, StepField, StepResult } from '../auth-flow/step.js';

/**
 * What plugin HTML may keep: text formatting, lists, headings, links (http, https, mailto; opened in a
 * new tab without an opener) and images over https. No script, style, form, frame, event handler or
 * javascript: URL survives.
 */
const policy: sanitizeHtml.IOptions = {
  allowedTags: [
    'p',
    'br',
    'b',
    'strong',
    'i',
    'em',
    'u',
    'ul',
    'ol',
    'li',
    'h2',
    'h3',
    'h4',
    'a',
    'img',
    'code',
    'small',
    'span',
    'div',
  ],
  allowedAttributes: {
    // target and rel are set by the transform below (whatever the plugin wrote).
    a: ['href', 'title', 'target', 'rel'],
    img: ['src', 'alt', 'width', 'height'],
  },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['https'] },
  transformTags: {
    a: sanitizeHtml.simpleTransform('a', { target: '_blank', rel: 'noopener noreferrer' }),
  },
};

export function sanitizePluginHtml(html: string): string {
  return sanitizeHtml(html, policy);
}

export interface HtmlStepDefinition<Input> {
  id: string;
  flows?: readonly FlowKind[];
  title: string;
  /** The plugin's HTML for this screen; untrusted: it is sanitized before any page shows it. */
  html(context: StepContext): string | Promise<string>;
  /** Inputs shown under the HTML (e.g. an "I agree" checkbox). */
  fields?: StepField[];
  input: z.ZodType<Input>;
  run(context: StepContext, input: Input): Promise<StepResult>;
}

/**
 * A plugin step delivered as sanitized HTML (docs/plugins.md): the screen's `data.html` is the
 * plugin's markup after sanitize-html, safe to insert into a page as it is.
 */
export function createHtmlStep<Input>(definition: HtmlStepDefinition<Input>): AuthFlowStep<Input> {
  return {
    id: definition.id,
    ...(definition.flows ? { flows: definition.flows } : {}),
    input: definition.input,
    run: definition.run,
    async screen(context) {
      return {
        title: definition.title,
        fields: definition.fields ?? [],
        data: { html: sanitizePluginHtml(await definition.html(context)) },
      };
    },
  };
}
