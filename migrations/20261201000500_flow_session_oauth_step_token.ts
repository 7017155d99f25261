import type { Knex } from 'knex';

// The provider callback of a funnel's `oauth` step finds its flow session by the step's token.
export async function up(db: Knex): Promise<void> {
  await db.raw(
    `create index auth_flow_sessions_oauth_step_token on auth_flow_sessions ((temp_data->>'oauthStepToken'))
     where temp_data->>'oauthStepToken' is not null`,
  );
}

export async function down(db: Knex): Promise<void> {
  await db.raw('drop index if exists auth_flow_sessions_oauth_step_token');
}
