import { z } from 'zod';

/** What the pages show of the product: its name, its logo, its primary colour (BRAND_* settings). */
export interface Brand {
  productName: string;
  /** An https URL or a path of this service; absent: the name alone. */
  logoUrl?: string | undefined;
  /** `#rrggbb`: buttons, links and focus rings of the pages (/assets/brand.css). */
  primaryColor: string;
}

export const brandSettings = z.object({
  BRAND_PRODUCT_NAME: z.string().min(1).max(100).default('Identity'),
  BRAND_LOGO_URL: z
    .string()
    .max(2000)
    .refine((value) => /^(https:\/\/|\/(?!\/))/.test(value), 'must be an https URL or a path')
    .optional(),
  BRAND_PRIMARY_COLOR: z
    .string()
    .regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour as #rrggbb')
    .default('#2f5bea'),
});

export function brandFrom(environment: z.input<typeof brandSettings>): Brand {
  const settings = brandSettings.parse(environment);
  return {
    productName: settings.BRAND_PRODUCT_NAME,
    logoUrl: settings.BRAND_LOGO_URL,
    primaryColor: settings.BRAND_PRIMARY_COLOR,
  };
}
