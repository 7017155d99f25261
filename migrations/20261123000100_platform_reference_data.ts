import type { Knex } from 'knex';

/**
 * Platform reference data (spec: Reference data entities): subject, level, format and grade_range in one
 * table keyed by (entity, key), and the usage registry domain services report to.
 *
 * A deleted entry stays as a tombstone (deleted_at set): its primary key keeps the key taken, so a
 * deleted key can never be created again (keys are never re-purposed).
 */
export async function up(db: Knex): Promise<void> {
  await db.raw(`
    create table reference_data_entries (
      entity varchar(20) not null,
      key varchar(100) not null,
      title jsonb not null,
      description jsonb null,
      parent_key varchar(100) null,
      display_order integer not null default 0,
      is_active boolean not null default true,
      min_grade integer null,
      max_grade integer null,
      min_age integer null,
      max_age integer null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      deleted_at timestamptz null,
      primary key (entity, key),
      foreign key (entity, parent_key) references reference_data_entries (entity, key),
      constraint reference_data_entity_check
        check (entity in ('subject', 'level', 'format', 'grade_range')),
      constraint reference_data_parent_only_subjects check (parent_key is null or entity = 'subject'),
      constraint reference_data_no_self_parent check (parent_key is null or parent_key <> key),
      constraint reference_data_description_entities
        check (description is null or entity in ('subject', 'format')),
      constraint reference_data_grades_only_grade_ranges check (
        entity = 'grade_range'
        or (min_grade is null and max_grade is null and min_age is null and max_age is null)
      ),
      constraint reference_data_grade_order check (min_grade is null or max_grade is null or min_grade <= max_grade),
      constraint reference_data_age_order check (min_age is null or max_age is null or min_age <= max_age)
    )
  `);
  await db.raw(
    `create index reference_data_entries_listing on reference_data_entries (entity, display_order, key)
       where deleted_at is null`,
  );
  await db.raw(
    `create index reference_data_entries_children on reference_data_entries (entity, parent_key)
       where parent_key is not null`,
  );

  // Which domain entity (used_by, e.g. "course:42") of which service (its OAuth client_id) refers to a key.
  await db.raw(`
    create table reference_data_usages (
      entity varchar(20) not null,
      key varchar(100) not null,
      client_id varchar(100) not null,
      used_by varchar(200) not null,
      created_at timestamptz not null default now(),
      primary key (entity, key, client_id, used_by),
      foreign key (entity, key) references reference_data_entries (entity, key)
    )
  `);

  await db('permissions')
    .insert([
      {
        key: 'platform.reference-data.usage.write',
        description: 'Record and release usage of reference-data keys (domain services)',
      },
    ])
    .onConflict('key')
    .ignore();

  const entries = [
    ...levels.map(([key, en, ru], index) => ({
      entity: 'level',
      key,
      title: JSON.stringify({ en, ru }),
      display_order: (index + 1) * 10,
    })),
    // Formats have no display_order in the spec: they are listed by key.
    ...formats.map(([key, en, ru]) => ({ entity: 'format', key, title: JSON.stringify({ en, ru }) })),
    ...gradeRanges.map(([key, en, ru, grades, ages], index) => ({
      entity: 'grade_range',
      key,
      title: JSON.stringify({ en, ru }),
      display_order: (index + 1) * 10,
      min_grade: grades?.[0] ?? null,
      max_grade: grades?.[1] ?? null,
      min_age: ages?.[0] ?? null,
      max_age: ages?.[1] ?? null,
    })),
  ];
  await db('reference_data_entries').insert(entries);
}

// The literal keys the spec lists (Reference data entities), with English and Russian titles.
const levels: [string, string, string][] = [
  ['beginner', 'Beginner', 'Начальный'],
  ['basic', 'Basic', 'Базовый'],
  ['advanced', 'Advanced', 'Продвинутый'],
  ['olympiad', 'Olympiad', 'Олимпиадный'],
  ['pro', 'Professional', 'Профессиональный'],
];

const formats: [string, string, string][] = [
  ['online_course', 'Online course', 'Онлайн-курс'],
  ['intensive', 'Intensive', 'Интенсив'],
  ['mini_group', 'Mini-group', 'Мини-группа'],
  ['circle', 'Circle', 'Кружок'],
  ['individual', 'Individual lessons', 'Индивидуальные занятия'],
  ['offline', 'In-person classes', 'Очные занятия'],
  ['competition', 'Competition', 'Соревнование'],
];

const gradeRanges: [string, string, string, [number, number] | null, [number, number | null] | null][] = [
  ['g1-2', 'Grades 1–2', '1–2 классы', [1, 2], null],
  ['g3-4', 'Grades 3–4', '3–4 классы', [3, 4], null],
  ['g5-6', 'Grades 5–6', '5–6 классы', [5, 6], null],
  ['g7-8', 'Grades 7–8', '7–8 классы', [7, 8], null],
  ['g9-11', 'Grades 9–11', '9–11 классы', [9, 11], null],
  ['adult', 'Adults', 'Взрослые', null, [18, null]],
];

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('reference_data_usages');
  await db.schema.dropTableIfExists('reference_data_entries');
  await db('permissions').where({ key: 'platform.reference-data.usage.write' }).delete();
}
