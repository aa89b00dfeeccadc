import { parseDuration } from '@punctual/time';
import { registerDecorator, type ValidationArguments } from 'class-validator';

/** A duration string (`"30s"`) or whole milliseconds, as the time library parses them. */
export function IsDuration(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isDuration',
      target: target.constructor,
      propertyName: propertyName as string,
      validator: {
        validate(value: unknown) {
          try {
            parseDuration(value);
            return true;
          } catch {
            return false;
          }
        },
        defaultMessage: (args?: ValidationArguments) =>
          `${args?.property} must be a duration such as "250ms", "30s", "5m", "1h", "7d" or whole milliseconds`,
      },
    });
}
