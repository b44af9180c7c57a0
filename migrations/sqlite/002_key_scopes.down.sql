ALTER TABLE api_keys DROP COLUMN scope;
