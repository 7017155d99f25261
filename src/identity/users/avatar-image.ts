import { ApiError } from '../../http/api-error.js';

/** The largest avatar accepted: a phone photo, not a poster. */
export const maximumAvatarBytes = 2 * 1024 * 1024;

/** The image types a browser shows everywhere; anything else (SVG above all: it may carry script) is refused. */
const acceptedTypes = new Set(['image/png', 'image/jpeg', 'image/webp']);

export const avatarTooLarge = () =>
  new ApiError(400, 'avatar_too_large', 'The image is larger than 2 MB.', { maxBytes: maximumAvatarBytes });

export interface AvatarImage {
  contentType: string;
  bytes: Buffer;
}

/**
 * An uploaded avatar, judged by its content (file-type reads the magic bytes), never by the file name or
 * the Content-Type the browser claims. 400 `avatar_missing`, `avatar_too_large` or `avatar_type`.
 */
export async function checkAvatarImage(upload: { bytes: Buffer; truncated: boolean }): Promise<AvatarImage> {
  if (upload.bytes.length === 0) {
    throw new ApiError(400, 'avatar_missing', 'Choose an image file.');
  }
  if (upload.truncated || upload.bytes.length > maximumAvatarBytes) throw avatarTooLarge();
  // Loaded at the first upload, not at every start (file-type and its readers: ~30 files).
  const { fileTypeFromBuffer } = await import('file-type');
  const type = await fileTypeFromBuffer(upload.bytes);
  if (!type || !acceptedTypes.has(type.mime)) {
    throw new ApiError(400, 'avatar_type', 'This file is not a PNG, JPEG or WebP image.');
  }
  return { contentType: type.mime, bytes: upload.bytes };
}
